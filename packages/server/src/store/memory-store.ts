import type {
  AccountRecord,
  AccountRepository,
  ApiKeyRecord,
  ApiKeyRepository,
  KeyWithAccount,
  Store,
} from './store.ts';

/**
 * The Store in process memory, for fast unit tests. It passes the same contract suite as the SQL
 * stores; it is never the only test of a feature, and the server never uses it.
 */
export class MemoryStore implements Store {
  private readonly accountRows = new Map<string, AccountRecord>();
  private readonly keyRows = new Map<string, ApiKeyRecord>();

  readonly accounts: AccountRepository = {
    insert: async (account) => {
      if (this.accountRows.has(account.id)) throw new Error(`duplicate account id ${account.id}`);
      this.accountRows.set(account.id, account);
    },
    get: async (id) => this.accountRows.get(id),
    list: async () => [...this.accountRows.values()].sort((a, b) => compare(b.id, a.id)),
    count: async () => this.accountRows.size,
    updatePlan: async (id, change) => {
      const current = this.accountRows.get(id);
      if (current === undefined) return undefined;
      const updated = { ...current, ...change };
      this.accountRows.set(id, updated);
      return updated;
    },
  };

  readonly apiKeys: ApiKeyRepository = {
    insert: async (key) => {
      if (!this.accountRows.has(key.accountId)) throw new Error(`no account ${key.accountId}`);
      for (const row of this.keyRows.values()) {
        if (row.id === key.id || row.hash === key.hash) throw new Error('duplicate api key');
      }
      this.keyRows.set(key.id, key);
    },
    findActiveByHash: async (hash): Promise<KeyWithAccount | undefined> => {
      for (const key of this.keyRows.values()) {
        if (key.hash !== hash || key.revokedAt !== null) continue;
        const account = this.accountRows.get(key.accountId);
        return account && { key, account };
      }
      return undefined;
    },
    get: async (id) => this.keyRows.get(id),
    listByAccount: async (accountId) =>
      [...this.keyRows.values()].filter((k) => k.accountId === accountId).sort((a, b) => compare(a.id, b.id)),
    revoke: async (id, at) => {
      const key = this.keyRows.get(id);
      if (key === undefined) return undefined;
      if (key.revokedAt !== null) return key;
      const revoked = { ...key, revokedAt: at };
      this.keyRows.set(id, revoked);
      return revoked;
    },
    touch: async (id, at) => {
      const key = this.keyRows.get(id);
      if (key !== undefined && (key.lastUsedAt === null || key.lastUsedAt < at)) {
        this.keyRows.set(id, { ...key, lastUsedAt: at });
      }
    },
  };

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
