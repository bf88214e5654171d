// Spend policies and the spends counted against them, as storage holds them (services/spending/).

/**
 * Caps on one asset (a network's native currency, or one token on one network). Amounts are atomic
 * units of that asset; null: no cap of that kind.
 */
export interface AssetLimitRecord {
  /** CAIP-2 network id. */
  readonly network: string;
  /** Token mint or contract (canonical spelling); null: the network's native currency. */
  readonly asset: string | null;
  /** What the operator called it when setting it (GET /networks' symbol), for display. */
  readonly symbol: string | null;
  readonly decimals: number;
  readonly maxPerPayment: bigint | null;
  /** Over any rolling 24 hours. */
  readonly maxPerDay: bigint | null;
}

/**
 * One policy: an account's (keyId null), which binds every spend of the account whichever key or
 * session makes it, or one API key's, which binds that key's spends on top of the account's.
 * Null lists mean "no rule of that kind"; a present list (even empty) allows only what it names.
 */
export interface SpendPolicyRecord {
  readonly accountId: string;
  readonly keyId: string | null;
  /** Null: no amount caps and every asset. Present: only the assets listed may be spent, within their caps. */
  readonly limits: readonly AssetLimitRecord[] | null;
  /** Canonical addresses (EVM checksummed, Solana as is). */
  readonly allowedRecipients: readonly string[] | null;
  /** Lower-case host names; `*.example.com` matches its subdomains. */
  readonly allowedHosts: readonly string[] | null;
  /** CAIP-2 network ids. */
  readonly allowedNetworks: readonly string[] | null;
  /** From this instant (Unix ms) the policy refuses every spend; null: never. */
  readonly expiresAt: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** One custodial spend, counted in the rolling day of its account (and key) until its payment fails. */
export interface SpendRecord {
  readonly paymentId: string;
  readonly accountId: string;
  /** The API key that made it; null for the dashboard session of the account. */
  readonly keyId: string | null;
  readonly network: string;
  /** Token address (canonical); null: native. */
  readonly asset: string | null;
  readonly amount: bigint;
  readonly createdAt: number;
}
