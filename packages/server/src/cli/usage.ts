import { GATE402_VERSION } from '../version.ts';

/**
 * The help of every command, kept apart from the commands so `gate402 … --help` loads none of them (and
 * reads no configuration: help works whatever the environment holds). Each command module parses
 * exactly the options listed here; the CLI help test holds the two together.
 */
export interface OptionHelp {
  /** As typed: `--account ACCOUNT_ID`. */
  readonly flag: string;
  readonly text: string;
}

export interface CommandHelp {
  /** The command's words after `gate402`: `keys create`. */
  readonly name: string;
  /** One or more usage lines, without `gate402 `. */
  readonly usage: readonly string[];
  readonly summary: string;
  readonly options: readonly OptionHelp[];
  /** A paragraph after the options. */
  readonly notes?: string;
}

const JSON_OPTION: OptionHelp = { flag: '--json', text: 'print only JSON: the result, or the error body' };
const ACCOUNT: OptionHelp = { flag: '--account ACCOUNT_ID', text: 'the account (acct_…), required' };
const CHAIN: OptionHelp = { flag: '--chain solana|evm', text: 'the chain family, required' };

export const COMMANDS: readonly CommandHelp[] = [
  {
    name: 'serve',
    usage: ['serve'],
    summary: 'run the gateway (what `npm start` runs) until SIGINT or SIGTERM',
    options: [],
    notes: `Configured by environment variables only, e.g. PORT=9000 DATA_DIR=./data gate402 serve; the
settings table is docs/reference/configuration.md. On storage with no account it creates a demo account
(GATE402_DEMO) and prints its API key and dashboard log-in once. With TLS_CERT_FILE, SIGHUP reloads
the certificate. LOG_FORMAT=json|pretty chooses the log lines (default: pretty on a terminal).`,
  },
  {
    name: 'migrate',
    usage: ['migrate [--json]'],
    summary: 'bring storage to the newest schema (serve does this too)',
    options: [JSON_OPTION],
  },
  {
    name: 'localnet',
    usage: [
      'localnet [--port N] [--ws-port N] [--host ADDR] [--ledger DIR] [--slot-ms N] [--finalized-depth N]',
    ],
    summary: 'run the Solana localnet alone, like solana-test-validator',
    options: [
      { flag: '--ledger DIR', text: 'keep accounts, ledger and keys in DIR (default: in memory)' },
      { flag: '--port N', text: 'JSON-RPC port (default 8899; 0 = any free port)' },
      { flag: '--ws-port N', text: 'WebSocket PubSub port (default port + 1)' },
      { flag: '--host ADDR', text: 'interface to bind (default 127.0.0.1)' },
      { flag: '--slot-ms N', text: 'slot length in ms (default 400; 0 = manual)' },
      { flag: '--finalized-depth N', text: 'slots until finalized (default 32)' },
    ],
  },
  {
    name: 'accounts create',
    usage: ['accounts create --name NAME --plan standard|premium|enterprise [--rate-limit N] [--json]'],
    summary: 'create an account',
    options: [
      { flag: '--name NAME', text: 'a name shown in lists and the dashboard, required' },
      { flag: '--plan PLAN', text: 'standard, premium or enterprise, required' },
      { flag: '--rate-limit N', text: 'requests per minute; enterprise only, and required there' },
      JSON_OPTION,
    ],
  },
  {
    name: 'accounts set-plan',
    usage: ['accounts set-plan ACCOUNT_ID --plan PLAN [--rate-limit N] [--json]'],
    summary: "change an account's plan (and an enterprise account's rate limit)",
    options: [
      { flag: '--plan PLAN', text: 'standard, premium or enterprise, required' },
      { flag: '--rate-limit N', text: 'requests per minute; enterprise only, and required there' },
      JSON_OPTION,
    ],
  },
  {
    name: 'accounts list',
    usage: ['accounts list [--json]'],
    summary: 'list every account',
    options: [JSON_OPTION],
  },
  {
    name: 'keys create',
    usage: ['keys create --account ACCOUNT_ID [--name NAME] [--admin] [--json]'],
    summary: 'create an API key; the key is printed this once',
    options: [
      ACCOUNT,
      { flag: '--name NAME', text: 'a name to tell keys apart (default "default")' },
      { flag: '--admin', text: "the key may read and set the account's spend policies (not for agents)" },
      JSON_OPTION,
    ],
  },
  {
    name: 'keys list',
    usage: ['keys list --account ACCOUNT_ID [--json]'],
    summary: "list an account's keys (never the secret)",
    options: [ACCOUNT, JSON_OPTION],
  },
  {
    name: 'keys revoke',
    usage: ['keys revoke KEY_ID [--json]'],
    summary: 'revoke a key; a running server refuses it within AUTH_CACHE_MS',
    options: [JSON_OPTION],
  },
  {
    name: 'wallets create',
    usage: ['wallets create --account ACCOUNT_ID --chain solana|evm [--json]'],
    summary: 'create a custodial wallet (its key sealed with the master key)',
    options: [ACCOUNT, CHAIN, JSON_OPTION],
  },
  {
    name: 'wallets challenge',
    usage: ['wallets challenge --account ACCOUNT_ID --chain solana|evm --address ADDRESS [--json]'],
    summary: "print a text for ADDRESS's key to sign (valid 10 minutes, once): proof of control for watch",
    options: [
      ACCOUNT,
      CHAIN,
      { flag: '--address ADDRESS', text: 'the address to watch, required' },
      JSON_OPTION,
    ],
  },
  {
    name: 'wallets watch',
    usage: [
      'wallets watch --account ACCOUNT_ID --chain solana|evm --address ADDRESS',
      '    (--challenge TEXT | --challenge-file FILE) --signature SIGNATURE [--json]',
    ],
    summary: 'register ADDRESS as a watch-only wallet, with the signed challenge as proof',
    options: [
      ACCOUNT,
      CHAIN,
      { flag: '--address ADDRESS', text: 'the address, required' },
      { flag: '--challenge TEXT', text: 'the text `wallets challenge` printed' },
      { flag: '--challenge-file FILE', text: 'or the file it was written to' },
      {
        flag: '--signature SIGNATURE',
        text: 'Solana: ed25519 of the text (base58, base64 or hex); EVM: personal_sign (0x…)',
      },
      JSON_OPTION,
    ],
  },
  {
    name: 'webhooks create',
    usage: ['webhooks create --account ACCOUNT_ID --url URL [--events TYPE,TYPE] [--json]'],
    summary: 'add a webhook endpoint; its signing secret is printed this once',
    options: [
      ACCOUNT,
      {
        flag: '--url URL',
        text: 'where deliveries are POSTed, required (https, public; else ALLOW_PRIVATE_OUTBOUND_URLS)',
      },
      { flag: '--events TYPE,…', text: 'e.g. payment.received,payment.confirmed (default: every event)' },
      JSON_OPTION,
    ],
  },
  {
    name: 'webhooks list',
    usage: ['webhooks list --account ACCOUNT_ID [--json]'],
    summary: "list an account's webhook endpoints",
    options: [ACCOUNT, JSON_OPTION],
  },
  {
    name: 'webhooks delete',
    usage: ['webhooks delete WEBHOOK_ID --account ACCOUNT_ID [--json]'],
    summary: 'delete a webhook endpoint',
    options: [ACCOUNT, JSON_OPTION],
  },
  {
    name: 'webhooks enable',
    usage: ['webhooks enable WEBHOOK_ID --account ACCOUNT_ID [--json]'],
    summary: 'send to an endpoint again (after it answered 410 Gone, or was disabled)',
    options: [ACCOUNT, JSON_OPTION],
  },
  {
    name: 'webhooks disable',
    usage: ['webhooks disable WEBHOOK_ID --account ACCOUNT_ID [--json]'],
    summary: 'stop sending to an endpoint, keeping it',
    options: [ACCOUNT, JSON_OPTION],
  },
  {
    name: 'dashboard set-password',
    usage: ['dashboard set-password --account ACCOUNT_ID [--email EMAIL] [--json] < password-file'],
    summary: 'give an account a dashboard log-in, or a new password; reads the password from stdin',
    options: [ACCOUNT, { flag: '--email EMAIL', text: 'the log-in; needed the first time' }, JSON_OPTION],
    notes:
      'The password is read from standard input, never the command line, where the process list shows it.',
  },
  {
    name: 'faucet',
    usage: ['faucet --to ADDRESS --amount N [--token USDC] [--network ID] [--json]'],
    summary: 'fund an address on the local chains of a running `gate402 serve` (no API key)',
    options: [
      { flag: '--to ADDRESS', text: 'a Solana or EVM address; it picks the chain, required' },
      { flag: '--amount N', text: 'in whole units, e.g. 2.5 (SOL or ETH, or the token), required' },
      { flag: '--token USDC', text: 'a token instead of the native coin' },
      { flag: '--network ID', text: "the CAIP-2 id of the address's network (see GET /networks)" },
      JSON_OPTION,
    ],
  },
  {
    name: 'policies list',
    usage: ['policies list [--url URL] [--json]'],
    summary: "list the account's spend policies: its own and its keys'",
    options: [
      { flag: '--url URL', text: 'the gateway (default GATE402_URL, else http://127.0.0.1:8402)' },
      JSON_OPTION,
    ],
    notes:
      'The admin-scoped API key comes from GATE402_API_KEY only (an argument would show in the process list). See the guide "Spend policies".',
  },
  {
    name: 'policies show',
    usage: ['policies show [--key-id KEY_ID] [--url URL] [--json]'],
    summary: "show the account's spend policy, or one key's",
    options: [
      { flag: '--key-id KEY_ID', text: "an API key's policy (key_…); default: the account's" },
      { flag: '--url URL', text: 'the gateway (default GATE402_URL, else http://127.0.0.1:8402)' },
      JSON_OPTION,
    ],
    notes:
      'The admin-scoped API key comes from GATE402_API_KEY only (an argument would show in the process list). See the guide "Spend policies".',
  },
  {
    name: 'policies set',
    usage: ['policies set [--key-id KEY_ID] --policy JSON | --file PATH [--url URL] [--json]'],
    summary: "set (replace) the account's spend policy, or one key's",
    options: [
      { flag: '--policy JSON', text: 'the policy, as PUT /spend-policies/account takes it' },
      { flag: '--file PATH', text: 'the policy, read from a JSON file' },
      ...[
        { flag: '--key-id KEY_ID', text: "an API key's policy (key_…); default: the account's" },
        { flag: '--url URL', text: 'the gateway (default GATE402_URL, else http://127.0.0.1:8402)' },
        JSON_OPTION,
      ],
    ],
    notes: `Example: --policy '{"limits":[{"network":"solana:localnet","asset":"SOL","maxPerPayment":"0.5","maxPerDay":"2"}],"allowedRecipients":["9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"],"allowedHosts":["api.example.com"]}'
(allowedHosts alone pays nobody: list the hosts' payees in allowedRecipients).
The admin-scoped API key comes from GATE402_API_KEY only. See the guide "Spend policies".`,
  },
  {
    name: 'policies clear',
    usage: ['policies clear [--key-id KEY_ID] [--url URL] [--json]'],
    summary: "remove the account's spend policy, or one key's",
    options: [
      { flag: '--key-id KEY_ID', text: "an API key's policy (key_…); default: the account's" },
      { flag: '--url URL', text: 'the gateway (default GATE402_URL, else http://127.0.0.1:8402)' },
      JSON_OPTION,
    ],
    notes:
      'The admin-scoped API key comes from GATE402_API_KEY only (an argument would show in the process list). See the guide "Spend policies".',
  },
  {
    name: 'mcp',
    usage: ['mcp [--url URL] [--public-only]'],
    summary: "serve an AI agent the gateway's tools over MCP on stdio, as the account of GATE402_API_KEY",
    options: [
      { flag: '--url URL', text: 'the gateway (default GATE402_URL, else http://127.0.0.1:8402)' },
      {
        flag: '--public-only',
        text: 'fetch_paid_url refuses private, loopback and link-local addresses, as /mcp does',
      },
    ],
    notes: `The API key comes from GATE402_API_KEY only (an argument would show in the process list). Tools:
fetch_paid_url (GET/POST a URL, paying its 402 from a custodial wallet within maxAmount), get_balances,
get_spend_limits, list_payments, get_payment. Each is a request to the gateway with that key, so its plan,
rate limit and spend policies apply. Stdout carries the protocol; messages go to stderr. The gateway serves the same
tools itself at POST /mcp (streamable HTTP, Bearer key). See the guide "Agents and MCP".`,
  },
];

/** Command groups: `gate402 keys --help` lists their subcommands. */
export const GROUPS: Readonly<Record<string, string>> = {
  accounts: 'accounts and their plans',
  keys: 'API keys',
  wallets: 'custodial and watch-only wallets',
  webhooks: 'webhook endpoints',
  dashboard: 'dashboard log-ins',
  policies: 'spend policies (through a running gateway, with an admin key)',
};

const HELP_OPTION: OptionHelp = { flag: '-h, --help', text: 'show this help' };

/** `gate402 --help`. */
export function mainHelp(): string {
  const lines = COMMANDS.map((c) => `  gate402 ${c.usage.join('\n  ')}\n      ${c.summary}`);
  return `gate402 ${GATE402_VERSION}: self-hostable x402 payment gateway

Usage:
${lines.join('\n')}

Every command takes -h or --help. Storage is the same as the server's: DATABASE_URL if set, else the
SQLite file in DATA_DIR (default ./data). With --json a command prints only JSON.`;
}

/** The help of `words` (a command, a group, or a group's subcommand); undefined when there is none. */
export function helpFor(words: readonly string[]): string | undefined {
  const [first, second] = words;
  if (first === undefined) return mainHelp();
  const command =
    COMMANDS.find((c) => second !== undefined && c.name === `${first} ${second}`) ??
    COMMANDS.find((c) => c.name === first);
  if (command !== undefined) return commandHelp(command);
  const group = GROUPS[first];
  if (group === undefined) return undefined;
  const subcommands = COMMANDS.filter((c) => c.name.startsWith(`${first} `));
  return `gate402 ${first}: ${group}

Usage:
${subcommands.map((c) => `  gate402 ${c.usage.join('\n  ')}\n      ${c.summary}`).join('\n')}

gate402 ${first} SUBCOMMAND --help shows a subcommand's options.`;
}

function commandHelp(command: CommandHelp): string {
  const options = [...command.options, HELP_OPTION];
  const width = Math.max(...options.map((o) => o.flag.length));
  return [
    `Usage: gate402 ${command.usage.join('\n  ')}`,
    '',
    `${command.summary[0]?.toUpperCase()}${command.summary.slice(1)}.`,
    '',
    'Options:',
    ...options.map((o) => `  ${o.flag.padEnd(width)}  ${o.text}`),
    ...(command.notes === undefined ? [] : ['', command.notes]),
  ].join('\n');
}
