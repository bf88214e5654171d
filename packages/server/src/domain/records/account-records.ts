import type { ApiKeyScope } from '../api-key-scope.ts';
import type { Plan } from '../plan.ts';

// Accounts and their API keys as storage holds them.

export interface AccountRecord {
  readonly id: string;
  readonly name: string;
  readonly plan: Plan;
  /** Requests per minute; set for enterprise accounts only, whose rate is per account. */
  readonly customRateLimit: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ApiKeyRecord {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  /** The first characters of the key, safe to show. */
  readonly displayPrefix: string;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  readonly hash: string;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
  readonly revokedAt: number | null;
  /** What the key may do beyond the plan's features (api-key-scope.ts); most keys have none. */
  readonly scopes: readonly ApiKeyScope[];
}

/** What authentication needs in one read: the key and the account it belongs to. */
export interface KeyWithAccount {
  readonly key: ApiKeyRecord;
  readonly account: AccountRecord;
}
