import type { ErrorCode } from '../../packages/server/src/domain/error-catalogue.ts';

/**
 * When gate402 answers each code, for docs/reference/errors.md. The code, its status and its default
 * message come from the catalogue; this says when, which the catalogue does not. Typed by the catalogue's
 * codes, so a new code without an explanation fails the type-check, and a removed one cannot linger.
 */
export const ERROR_EXPLANATIONS: Readonly<Record<ErrorCode, ErrorExplanation>> = {
  INVALID_PARAMETERS: {
    when: 'a parameter breaks its rule (`details` names each field), malformed JSON, an unknown field; a URL path with malformed percent-encoding or a path parameter over 100 characters (`details.path`); a NUL (`%00`) in the path or query (`details.path`, `details.query`); a request that is not valid HTTP/1.1 (`details.request`)',
    alsoAnsweredWith: [{ status: 431, when: 'request headers over 16 KiB in all (`details.headers`)' }],
  },
  INVALID_RECIPIENT: {
    when: 'the recipient address is invalid or does not exist, is the payer itself, is a Solana account that is no wallet (every sysvar; the native programs such as System, Vote, Stake, Config, Compute Budget and Address Lookup Table; the BPF loaders; the Token, Token-2022, Associated Token Account and Memo programs: a transfer to one fails on chain after its fee was paid, or is lost for good), is an EVM address in mixed case that does not match its EIP-55 checksum (a typo; one written in a single case carries no checksum), or is an EVM contract that reverts when paid',
  },
  UNAUTHORIZED: { when: 'API key missing, malformed, unknown or revoked' },
  FORBIDDEN: { when: "the plan does not include the endpoint, or the resource is another account's" },
  NOT_FOUND: { when: 'no such route or resource' },
  SPEND_LIMIT_EXCEEDED: {
    when: 'a custodial spend (`POST /payment/send`, `POST /payment/x402`, `POST /transaction/send`) above a cap of the spend policy of the API key or of its account: `details.limit` is `maxPerPayment` or `maxPerDay` (any rolling 24 hours; failed, expired and reverted payments do not count), `details.policy` `key` or `account`, `details.max` the cap and `details.remaining` what is left (`0.25 USDC`), with `details.resetsAt` (ISO time) when more frees up. Nothing was signed or recorded',
  },
  SPEND_NOT_ALLOWED: {
    when: 'a custodial spend the spend policy of the API key or of its account does not allow: `details.limit` is `allowedRecipients` (the recipient is not listed), `allowedHosts` (the resource URL is absent or its host is not listed, or the policy lists hosts but no `allowedRecipients` for a recipient the request names: docs/spend-policies.md), `allowedNetworks`, or `limits` (the policy caps assets and this one is not among them); `details.policy` is `key` or `account`. Nothing was signed or recorded',
  },
  SPEND_POLICY_EXPIRED: {
    when: 'a custodial spend under a spend policy past its `expiresAt` (`details.policy`: `key` or `account`): an expired policy allows nothing until an admin key sets it again',
  },
  PAYMENT_NOT_FOUND: { when: "no such payment in your account (another account's looks the same)" },
  INVALID_PAYMENT_STATE: {
    when: '`POST /payment/refund`: the payment is not `confirmed` or `finalized` yet (or failed, expired, reverted); `details.status` names its state',
  },
  TOKEN_NOT_FOUND: { when: '`GET /token/info`: the address is not a token mint (or ERC-20 contract)' },
  WALLET_ALREADY_REGISTERED: {
    when: 'the address is already registered, by any account (the answer never says which): registering it, or asking for a challenge for it',
  },
  WALLET_NOT_FOUND: {
    when: '`PATCH /wallets/{address}`: the account has no wallet at the address (none, or another account’s: not told apart)',
  },
  INVALID_CHALLENGE: {
    when: 'watch-only registration: `challenge` is not a text this gateway issued, or it was edited',
  },
  CHALLENGE_ACCOUNT_MISMATCH: {
    when: 'watch-only registration: the challenge was issued to another account',
  },
  CHALLENGE_ADDRESS_MISMATCH: {
    when: 'watch-only registration: the challenge was issued for another address or chain (`details.address`)',
  },
  CHALLENGE_ALREADY_USED: {
    when: 'watch-only registration: the challenge already registered an address; ask for a new one',
  },
  CHALLENGE_EXPIRED: {
    when: 'watch-only registration: the challenge is older than 10 minutes; ask for a new one',
  },
  INVALID_SIGNATURE: {
    when: 'watch-only registration: `signature` is not a signature of the challenge by the address (Solana ed25519, EVM personal_sign)',
  },
  EMAIL_ALREADY_REGISTERED: {
    when: '`gate402 dashboard set-password --email`: the email already logs in to another account. Sign-up never answers it: a taken email gets `400 INVALID_PARAMETERS` on `email` like any unusable one (see [The web dashboard](../dashboard.md))',
  },
  IDEMPOTENCY_KEY_IN_USE: { when: 'a request with this Idempotency-Key is still running' },
  IDEMPOTENCY_KEY_REUSED: { when: 'this Idempotency-Key was used with a different request' },
  PAYMENT_IDENTIFIER_REUSED: {
    when: "`POST /facilitator/verify` or `/settle`: the payload's x402 `payment-identifier` id was used by this account with another payload or other requirements (x402 reason `payment_identifier_conflict`); nothing was run",
  },
  PAYMENT_FAILED: {
    when: 'the payment failed on chain or expired before landing; `details.paymentId` names it',
  },
  PAYLOAD_TOO_LARGE: { when: 'body over `BODY_LIMIT_BYTES`' },
  UNSUPPORTED_MEDIA_TYPE: { when: 'a body that is not `application/json`' },
  PAYMENT_OPTION_REFUSED: {
    when: "`POST /payment/x402`: no option of the seller's PaymentRequired may be paid from the wallet — not the `exact` scheme, a network not configured or not in `networks`, a token the network does not list (a seller's own mint is never paid), above the buyer's `maxAmount` for that token, a `maxTimeoutSeconds` longer than the gateway signs for, or more than the wallet holds; `details` maps each option (`paymentRequired.accepts[0]`) to its reason. Nothing was signed or recorded",
  },
  INSUFFICIENT_BALANCE: {
    when: 'not enough funds for the payment plus fees: the message says what the payment and its fees need and what the wallet holds, and `details.walletAddress` what it needs (`needs 0.600053 ETH including fees`), on Solana and EVM alike however large the gap; when the chain refused a send already recorded (concurrent sends beyond the balance), `details.paymentId` names that failed payment',
  },
  INVALID_PAYMENT_PROOF: {
    when: 'the proof is malformed, forged, expired, already used, for another recipient or resource, or names no resource while the request names one; `details.paymentProof` says which',
  },
  PAYMENT_VERIFICATION_FAILED: {
    when: 'the chain does not confirm what the proof claims (not found within `timeout`, failed, amount too low, or `reverted`: the payment it names left the chain)',
  },
  RATE_LIMIT_EXCEEDED: { when: "over the plan's rate; see `retryAfter`" },
  FEE_BUDGET_EXCEEDED: {
    when: "the account's daily budget of network fees the built-in x402 facilitator pays (`X402_FEE_BUDGET`) has no room for this settlement; nothing was sent; `retryAfter` counts to 00:00 UTC (see [x402](../x402.md))",
  },
  RATE_LIMIT: {
    when: 'listed by the spec beside `RATE_LIMIT_EXCEEDED`; gate402 never sends it, match either',
  },
  INTERNAL_ERROR: { when: 'a fault of ours; the body has only the request id, the log has the rest' },
  SERVICE_UNAVAILABLE: {
    when: "storage (PostgreSQL, SQLite's lock) or Redis is unavailable or slower than its time limit; nothing was done, see `retryAfter` and [When storage or Redis fails](../operations.md#when-storage-or-redis-fails)",
  },
  CHAIN_UNAVAILABLE: {
    when: 'no RPC endpoint of the network answers (down, slower than `RPC_TIMEOUT_MS`, answering HTTP errors); see `retryAfter` and [When an RPC endpoint fails](../operations.md#when-an-rpc-endpoint-fails)',
  },
};

/** When a code is answered, and the other statuses it comes with (431 for headers too large). */
export interface ErrorExplanation {
  readonly when: string;
  readonly alsoAnsweredWith?: readonly { readonly status: number; readonly when: string }[];
}
