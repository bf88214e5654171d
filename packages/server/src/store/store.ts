import type { Plan } from '../domain/plan.ts';

/**
 * The storage port. Services depend on this interface only; SQL never leaves `store/`.
 * Every implementation (Kysely on SQLite, Kysely on PostgreSQL, in-memory) passes the same contract
 * suite in test/store-contract.ts. Timestamps are Unix milliseconds.
 */
export interface Store {
  readonly accounts: AccountRepository;
  readonly apiKeys: ApiKeyRepository;
  /** Resolves when storage answers a trivial query; used by /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

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
}

/** What authentication needs in one read: the key and the account it belongs to. */
export interface KeyWithAccount {
  readonly key: ApiKeyRecord;
  readonly account: AccountRecord;
}

export interface AccountRepository {
  insert(account: AccountRecord): Promise<void>;
  get(id: string): Promise<AccountRecord | undefined>;
  /** Newest first. */
  list(): Promise<AccountRecord[]>;
  count(): Promise<number>;
  /** Returns the updated account, or undefined when there is none with that id. */
  updatePlan(
    id: string,
    change: { plan: Plan; customRateLimit: number | null; updatedAt: number },
  ): Promise<AccountRecord | undefined>;
}

export interface ApiKeyRepository {
  insert(key: ApiKeyRecord): Promise<void>;
  /** The key with this hash and its account, unless it is revoked or unknown. */
  findActiveByHash(hash: string): Promise<KeyWithAccount | undefined>;
  get(id: string): Promise<ApiKeyRecord | undefined>;
  /** Oldest first, revoked keys included. */
  listByAccount(accountId: string): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked once; a second call keeps the first time. Undefined when unknown. */
  revoke(id: string, at: number): Promise<ApiKeyRecord | undefined>;
  /** Records use of the key; never moves lastUsedAt backwards. */
  touch(id: string, at: number): Promise<void>;
}
