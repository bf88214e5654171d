import { timingSafeEqual } from 'node:crypto';
import { generateApiKey, hashApiKey, hashApiKeyHex, isApiKeyShape } from '../../domain/api-key.ts';
import type { ApiKeyScope } from '../../domain/api-key-scope.ts';
import { GatewayError, invalidParameters } from '../../domain/gateway-error.ts';
import { newId } from '../../domain/ids.ts';
import { isPlan, MAX_RATE_LIMIT_PER_MINUTE, PLANS, type Plan, rateLimitOf } from '../../domain/plan.ts';
import type { AccountRecord, ApiKeyRecord } from '../../domain/records/account-records.ts';
import type { Store } from '../../store/store.ts';

const MAX_NAME_LENGTH = 100;
/** last_used_at is written at most this often per key, so authentication is not a write per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface CreatedApiKey {
  readonly record: ApiKeyRecord;
  /** The secret. Returned here once; only its hash is stored. */
  readonly key: string;
}

export interface AccountView extends AccountRecord {
  /** Requests per minute this account may make. */
  readonly rateLimit: number;
}

/** Who presented a key: the key, and its account with the plan's figures already worked out. */
export interface AuthenticatedKey {
  readonly key: ApiKeyRecord;
  readonly account: AccountView;
}

/** How many authenticated keys the cache holds before it starts afresh. */
const AUTH_CACHE_MAX_ENTRIES = 10_000;

/** Accounts, their plans and their API keys. */
export class AccountService {
  /**
   * Authenticated keys by hash, for `authCacheMs`: authentication is on every request, and a database
   * round trip costs more than the rest of a small request. Changes made through this service (revoke,
   * plan) drop the entries at once; changes made elsewhere (another instance, the CLI) are seen within
   * `authCacheMs`. Unknown keys are not cached, so random keys cannot fill memory.
   */
  private readonly authCache = new Map<string, { at: number; found: AuthenticatedKey }>();

  constructor(
    private readonly store: Store,
    private readonly now: () => number = Date.now,
    private readonly authCacheMs = 0,
  ) {}

  async createAccount(input: { name: string; plan: string; rateLimit?: number }): Promise<AccountView> {
    const name = validName(input.name);
    const { plan, customRateLimit } = validPlan(input.plan, input.rateLimit);
    const at = this.now();
    const account: AccountRecord = {
      id: newId('acct', at),
      name,
      plan,
      customRateLimit,
      createdAt: at,
      updatedAt: at,
    };
    await this.store.accounts.insert(account);
    return view(account);
  }

  async getAccount(id: string): Promise<AccountView> {
    const account = await this.store.accounts.get(id);
    if (account === undefined) throw new GatewayError('NOT_FOUND', { message: `No account ${id}.` });
    return view(account);
  }

  async listAccounts(): Promise<AccountView[]> {
    return (await this.store.accounts.list()).map(view);
  }

  async setPlan(accountId: string, input: { plan: string; rateLimit?: number }): Promise<AccountView> {
    const { plan, customRateLimit } = validPlan(input.plan, input.rateLimit);
    const updated = await this.store.accounts.updatePlan(accountId, {
      plan,
      customRateLimit,
      updatedAt: this.now(),
    });
    if (updated === undefined) throw new GatewayError('NOT_FOUND', { message: `No account ${accountId}.` });
    this.authCache.clear();
    return view(updated);
  }

  /**
   * A new key of the account. `scopes`: what it may do beyond the plan's features (api-key-scope.ts);
   * `admin` is given only through the CLI or the account owner's dashboard session, never by a key.
   */
  async createKey(
    accountId: string,
    name = 'default',
    scopes: readonly ApiKeyScope[] = [],
  ): Promise<CreatedApiKey> {
    const keyName = validName(name);
    await this.getAccount(accountId);
    const generated = generateApiKey();
    const at = this.now();
    const record: ApiKeyRecord = {
      id: newId('key', at),
      accountId,
      name: keyName,
      displayPrefix: generated.displayPrefix,
      hash: generated.hash.toString('hex'),
      createdAt: at,
      lastUsedAt: null,
      revokedAt: null,
      scopes: [...new Set(scopes)],
    };
    await this.store.apiKeys.insert(record);
    return { record, key: generated.key };
  }

  async listKeys(accountId: string): Promise<ApiKeyRecord[]> {
    await this.getAccount(accountId);
    return this.store.apiKeys.listByAccount(accountId);
  }

  /**
   * Revokes a key; from then on it authenticates nothing. With `accountId`, a key of another account
   * is answered as not found, so one account cannot learn about another's keys.
   */
  async revokeKey(keyId: string, accountId?: string): Promise<ApiKeyRecord> {
    const key = await this.store.apiKeys.get(keyId);
    if (key === undefined || (accountId !== undefined && key.accountId !== accountId)) {
      throw new GatewayError('NOT_FOUND', { message: `No API key ${keyId}.` });
    }
    const revoked = await this.store.apiKeys.revoke(keyId, this.now());
    if (revoked === undefined) throw new GatewayError('NOT_FOUND', { message: `No API key ${keyId}.` });
    this.authCache.delete(revoked.hash);
    return revoked;
  }

  /**
   * What `authenticate` would answer, when it can answer without storage (the key was authenticated
   * less than `authCacheMs` ago); undefined otherwise, which says nothing about the key.
   */
  cachedAuthentication(presented: string): AuthenticatedKey | undefined {
    if (this.authCacheMs === 0 || !isApiKeyShape(presented)) return undefined;
    return this.fromCache(hashApiKeyHex(presented), this.now());
  }

  private fromCache(hash: string, at: number): AuthenticatedKey | undefined {
    const cached = this.authCache.get(hash);
    return cached !== undefined && at - cached.at < this.authCacheMs ? cached.found : undefined;
  }

  /**
   * The key and account behind a presented secret, or undefined for anything that is not an active key.
   * The stored hash is found through a unique index on SHA-256(key), then compared in constant time:
   * the index lookup teaches an attacker nothing (finding a hash says nothing about keys whose hashes
   * are near it), and the explicit comparison keeps that true whatever the store's equality is.
   */
  async authenticate(presented: string): Promise<AuthenticatedKey | undefined> {
    if (!isApiKeyShape(presented)) return undefined;
    return this.authenticateDigest(hashApiKey(presented));
  }

  /**
   * As `authenticate`, from the key's SHA-256: what a long-lived connection keeps to ask again later
   * whether its key is still active, so that it need not hold the secret itself.
   */
  async authenticateDigest(digest: Buffer): Promise<AuthenticatedKey | undefined> {
    const hash = digest.toString('hex');
    const at = this.now();
    const cached = this.fromCache(hash, at);
    if (cached !== undefined) return cached;
    const stored = await this.store.apiKeys.findActiveByHash(hash);
    if (stored === undefined || !sameDigest(stored.key.hash, digest)) {
      this.authCache.delete(hash);
      return undefined;
    }
    const found: AuthenticatedKey = { key: stored.key, account: view(stored.account) };
    if (this.authCacheMs > 0) {
      if (this.authCache.size >= AUTH_CACHE_MAX_ENTRIES) this.authCache.clear();
      this.authCache.set(hash, { at, found });
    }
    if (found.key.lastUsedAt === null || at - found.key.lastUsedAt >= LAST_USED_RESOLUTION_MS) {
      await this.store.apiKeys.touch(found.key.id, at);
    }
    return found;
  }
}

function sameDigest(storedHex: string, digest: Buffer): boolean {
  const stored = Buffer.from(storedHex, 'hex');
  return stored.length === digest.length && timingSafeEqual(stored, digest);
}

export function view(account: AccountRecord): AccountView {
  return { ...account, rateLimit: rateLimitOf(account.plan, account.customRateLimit) };
}

function validName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > MAX_NAME_LENGTH) {
    throw invalidParameters({ name: `must be 1 to ${MAX_NAME_LENGTH} characters` });
  }
  // A name is shown in the dashboard and the CLI; NUL cannot even be stored in PostgreSQL text.
  if (/\p{Cc}/u.test(trimmed)) throw invalidParameters({ name: 'must not contain control characters' });
  return trimmed;
}

function validPlan(
  plan: string,
  rateLimit: number | undefined,
): { plan: Plan; customRateLimit: number | null } {
  if (!isPlan(plan)) throw invalidParameters({ plan: `must be one of ${PLANS.join(', ')}` });
  if (plan !== 'enterprise') {
    if (rateLimit !== undefined) {
      throw invalidParameters({ rateLimit: 'is set by the plan; only enterprise accounts carry their own' });
    }
    return { plan, customRateLimit: null };
  }
  if (
    rateLimit === undefined ||
    !Number.isInteger(rateLimit) ||
    rateLimit < 1 ||
    rateLimit > MAX_RATE_LIMIT_PER_MINUTE
  ) {
    throw invalidParameters({
      rateLimit: `enterprise needs a whole number of requests per minute from 1 to ${MAX_RATE_LIMIT_PER_MINUTE}`,
    });
  }
  return { plan, customRateLimit: rateLimit };
}
