/** Usage lines of every command, kept apart so `gate402 --help` loads none of the commands. */
export const ACCOUNTS_USAGE = `gate402 accounts create --name NAME --plan standard|premium|enterprise [--rate-limit N] [--json]
gate402 accounts set-plan ACCOUNT_ID --plan PLAN [--rate-limit N] [--json]
gate402 accounts list [--json]`;

export const KEYS_USAGE = `gate402 keys create --account ACCOUNT_ID [--name NAME] [--json]
gate402 keys list --account ACCOUNT_ID [--json]
gate402 keys revoke KEY_ID [--json]`;

export const WALLETS_USAGE = `gate402 wallets create --account ACCOUNT_ID --chain solana|evm [--json]
gate402 wallets challenge --account ACCOUNT_ID --chain solana|evm --address ADDRESS [--json]
    print a text for ADDRESS's key to sign (valid 10 minutes, once): proof of control for watch
gate402 wallets watch --account ACCOUNT_ID --chain solana|evm --address ADDRESS
    (--challenge TEXT | --challenge-file FILE) --signature SIGNATURE [--json]
    register ADDRESS as watch-only; SIGNATURE: Solana ed25519 of the text (base58, base64 or hex),
    EVM personal_sign (0x…)`;

export const WEBHOOKS_USAGE = `gate402 webhooks create --account ACCOUNT_ID --url URL [--events payment.received,payment.confirmed] [--json]
gate402 webhooks list --account ACCOUNT_ID [--json]
gate402 webhooks delete WEBHOOK_ID --account ACCOUNT_ID [--json]
gate402 webhooks enable|disable WEBHOOK_ID --account ACCOUNT_ID [--json]`;

export const DASHBOARD_USAGE = `gate402 dashboard set-password --account ACCOUNT_ID [--email EMAIL] [--json] < password-file
    give an account a dashboard log-in (EMAIL needed the first time), or a new password; reads it from stdin`;

export const FAUCET_USAGE = `gate402 faucet --to ADDRESS --amount N [--token USDC] [--network ID] [--json]
    fund an address on the local chains of a running \`gate402 serve\` (no API key)`;
