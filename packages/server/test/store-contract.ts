import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateApiKey } from '../src/domain/api-key.ts';
import { newId } from '../src/domain/ids.ts';
import type { AccountRecord, ApiKeyRecord, Store } from '../src/store/store.ts';

/**
 * The behaviour every Store must have. Each implementation (in-memory, SQLite, PostgreSQL) runs this
 * same suite, so the fast fake cannot drift from the real databases.
 */
export function describeStoreContract(
  name: string,
  open: () => Promise<{ store: Store; dispose(): Promise<void> }>,
  options: { skip?: string | false } = {},
): void {
  describe(`Store contract: ${name}`, { skip: options.skip ?? false }, () => {
    let store: Store;
    let dispose: () => Promise<void>;

    before(async () => {
      ({ store, dispose } = await open());
    });
    after(async () => {
      await store?.close();
      await dispose?.();
    });

    it('answers ping', async () => {
      await store.ping();
    });

    it('stores an account and reads it back exactly', async () => {
      const account = anAccount({ name: 'Ünïcode “name” ✓', plan: 'enterprise', customRateLimit: 12_345 });
      await store.accounts.insert(account);
      assert.deepEqual(await store.accounts.get(account.id), account);
      assert.equal(await store.accounts.get('acct_missing'), undefined);
    });

    it('refuses a second account with the same id and keeps the first', async () => {
      const account = anAccount({ name: 'first' });
      await store.accounts.insert(account);
      await assert.rejects(store.accounts.insert({ ...account, name: 'second' }));
      assert.equal((await store.accounts.get(account.id))?.name, 'first');
    });

    it('lists accounts newest first and counts them', async () => {
      const before = await store.accounts.count();
      const a = anAccount({ createdAt: 1_000 });
      const b = anAccount({ createdAt: 2_000 });
      await store.accounts.insert(a);
      await store.accounts.insert(b);
      const ids = (await store.accounts.list()).map((x) => x.id);
      assert.ok(ids.indexOf(b.id) < ids.indexOf(a.id));
      assert.equal(await store.accounts.count(), before + 2);
    });

    it('changes a plan and reports an unknown account as undefined', async () => {
      const account = anAccount({ plan: 'standard' });
      await store.accounts.insert(account);
      const updated = await store.accounts.updatePlan(account.id, {
        plan: 'enterprise',
        customRateLimit: 5_000,
        updatedAt: account.updatedAt + 1,
      });
      assert.deepEqual(updated, {
        ...account,
        plan: 'enterprise',
        customRateLimit: 5_000,
        updatedAt: account.updatedAt + 1,
      });
      assert.deepEqual(await store.accounts.get(account.id), updated);
      assert.equal(
        await store.accounts.updatePlan('acct_missing', {
          plan: 'premium',
          customRateLimit: null,
          updatedAt: 1,
        }),
        undefined,
      );
    });

    it('finds an active key with its account by hash', async () => {
      const account = anAccount({ plan: 'premium' });
      await store.accounts.insert(account);
      const key = aKey(account.id);
      await store.apiKeys.insert(key);
      assert.deepEqual(await store.apiKeys.findActiveByHash(key.hash), { key, account });
      assert.equal(await store.apiKeys.findActiveByHash('0'.repeat(64)), undefined);
    });

    it('refuses a key for an unknown account and a duplicate hash', async () => {
      await assert.rejects(store.apiKeys.insert(aKey('acct_does_not_exist')));
      const account = anAccount();
      await store.accounts.insert(account);
      const key = aKey(account.id);
      await store.apiKeys.insert(key);
      await assert.rejects(store.apiKeys.insert({ ...aKey(account.id), hash: key.hash }));
    });

    it('revokes once: a revoked key is not found, and a second revoke keeps the first time', async () => {
      const account = anAccount();
      await store.accounts.insert(account);
      const key = aKey(account.id);
      await store.apiKeys.insert(key);
      const revoked = await store.apiKeys.revoke(key.id, 5_000);
      assert.deepEqual(revoked, { ...key, revokedAt: 5_000 });
      assert.equal(await store.apiKeys.findActiveByHash(key.hash), undefined);
      assert.equal((await store.apiKeys.revoke(key.id, 9_000))?.revokedAt, 5_000);
      assert.equal(await store.apiKeys.revoke('key_missing', 1), undefined);
    });

    it('lists an account’s keys oldest first, revoked included, and only that account’s', async () => {
      const account = anAccount();
      const other = anAccount();
      await store.accounts.insert(account);
      await store.accounts.insert(other);
      const first = aKey(account.id);
      const second = aKey(account.id);
      await store.apiKeys.insert(first);
      await store.apiKeys.insert(second);
      await store.apiKeys.insert(aKey(other.id));
      await store.apiKeys.revoke(first.id, 7);
      assert.deepEqual(await store.apiKeys.listByAccount(account.id), [{ ...first, revokedAt: 7 }, second]);
    });

    it('records last use and never moves it backwards', async () => {
      const account = anAccount();
      await store.accounts.insert(account);
      const key = aKey(account.id);
      await store.apiKeys.insert(key);
      await store.apiKeys.touch(key.id, 2_000);
      await store.apiKeys.touch(key.id, 1_000);
      assert.equal((await store.apiKeys.get(key.id))?.lastUsedAt, 2_000);
    });
  });
}

let clock = Date.UTC(2026, 0, 1);

function anAccount(overrides: Partial<AccountRecord> = {}): AccountRecord {
  clock += 1;
  return {
    id: newId('acct'),
    name: 'account',
    plan: 'standard',
    customRateLimit: null,
    createdAt: clock,
    updatedAt: clock,
    ...overrides,
  };
}

function aKey(accountId: string): ApiKeyRecord {
  const generated = generateApiKey();
  clock += 1;
  return {
    id: newId('key'),
    accountId,
    name: 'key',
    displayPrefix: generated.displayPrefix,
    hash: generated.hash.toString('hex'),
    createdAt: clock,
    lastUsedAt: null,
    revokedAt: null,
  };
}
