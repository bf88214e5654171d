import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/domain/ids.ts';
import type { DiscoveryRecord } from '../../src/domain/records/discovery-records.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { Store } from '../../src/store/store.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../support/databases.ts';
import { aTestAccount } from '../support/test-account.ts';

/** The bazaar catalogue's repository (migration 0023), the same assertions on SQLite and PostgreSQL. */
function describeDiscoveryContract(name: string, storage: () => Promise<TempStorage>, options = {}) {
  describe(`discovery repository: ${name}`, options, () => {
    let store: Store;
    let temp: TempStorage;
    let a: string;
    let b: string;

    const resource = (accountId: string, overrides: Partial<DiscoveryRecord> = {}): DiscoveryRecord => ({
      accountId,
      resource: 'https://shop.example/weather',
      tool: '',
      type: 'http',
      x402Version: 2,
      description: 'Weather',
      mimeType: 'application/json',
      serviceName: null,
      tags: ['weather', 'forecast'],
      network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
      scheme: 'exact',
      payTo: 'PayToAddress111',
      accepts: [{ scheme: 'exact', amount: '10000' }],
      extensions: { bazaar: { info: { input: { type: 'http', method: 'GET' } }, schema: {} } },
      searchText: 'https://shop.example/weather weather forecast',
      createdAt: 1_000,
      updatedAt: 1_000,
      ...overrides,
    });

    before(async () => {
      temp = await storage();
      ({ store } = await openStore(temp.location));
      a = newId('acct');
      b = newId('acct');
      await store.accounts.insert(aTestAccount(a));
      await store.accounts.insert(aTestAccount(b));
    });
    after(async () => {
      await store?.close();
      await temp?.dispose();
    });

    it('stores a resource and reads it back exactly; a later declaration of it replaces it, keeping when it was first seen', async () => {
      assert.equal(await store.discovery.upsert(resource(a), 10), true);
      const first = await store.discovery.list({ accountId: a, limit: 10, offset: 0 });
      assert.deepEqual(first, { items: [resource(a)], total: 1 });
      const later = resource(a, {
        description: 'Weather, now hourly',
        tags: null,
        createdAt: 2_000,
        updatedAt: 2_000,
      });
      assert.equal(await store.discovery.upsert(later, 10), true);
      const { items, total } = await store.discovery.list({ accountId: a, limit: 10, offset: 0 });
      assert.equal(total, 1);
      assert.deepEqual(items[0], { ...later, createdAt: 1_000 });
    });

    it('keeps at most the bound of new resources per account; an update needs no room; accounts are apart', async () => {
      const other = (n: number) =>
        resource(a, { resource: `https://shop.example/r${n}`, updatedAt: 3_000 + n });
      assert.equal(await store.discovery.upsert(other(1), 2), true);
      assert.equal(await store.discovery.upsert(other(2), 2), false, 'the account holds 2: full');
      assert.equal(await store.discovery.upsert({ ...other(1), description: 'again' }, 2), true);
      assert.equal(await store.discovery.upsert(resource(b), 1), true, "b's room is b's own");
      // An MCP tool of the same URL is another resource.
      assert.equal(await store.discovery.upsert(resource(b, { tool: 'forecast', type: 'mcp' }), 2), true);
      assert.equal((await store.discovery.list({ accountId: b, limit: 10, offset: 0 })).total, 2);
    });

    it('lists newest first, filters exactly, pages with the total, and over all accounts without one', async () => {
      const all = await store.discovery.list({ limit: 100, offset: 0 });
      assert.equal(all.total, 4);
      const times = all.items.map((i) => i.updatedAt);
      assert.deepEqual(
        times,
        [...times].sort((x, y) => y - x),
      );
      assert.equal((await store.discovery.list({ type: 'mcp', limit: 10, offset: 0 })).total, 1);
      assert.equal((await store.discovery.list({ network: 'eip155:1', limit: 10, offset: 0 })).total, 0);
      assert.equal((await store.discovery.list({ payTo: 'PayToAddress111', limit: 10, offset: 0 })).total, 4);
      assert.equal((await store.discovery.list({ scheme: 'upto', limit: 10, offset: 0 })).total, 0);
      const page = await store.discovery.list({ limit: 1, offset: 3 });
      assert.deepEqual([page.items.length, page.total], [1, 4]);
      assert.deepEqual(await store.discovery.list({ limit: 10, offset: 4 }), { items: [], total: 4 });
    });

    it('searches for every word as literal text: % and _ match only themselves', async () => {
      await store.discovery.upsert(
        resource(b, {
          resource: 'https://odd.example/100%_off',
          searchText: 'https://odd.example/100%_off sale',
        }),
        10,
      );
      const words = async (...w: string[]) =>
        (await store.discovery.list({ words: w, limit: 10, offset: 0 })).items.map((i) => i.resource);
      assert.deepEqual(await words('100%_off'), ['https://odd.example/100%_off']);
      assert.deepEqual(await words('100%'), ['https://odd.example/100%_off']);
      assert.deepEqual(await words('%'), ['https://odd.example/100%_off']);
      assert.deepEqual(await words('_'), ['https://odd.example/100%_off']);
      assert.deepEqual(await words('1_0'), [], '_ is not any character');
      assert.deepEqual(await words('o%f'), [], '% is not any text');
      assert.deepEqual(await words('sale', 'odd'), ['https://odd.example/100%_off']);
      assert.deepEqual(await words('sale', 'weather'), []);
      assert.equal(
        (await store.discovery.list({ accountId: a, words: ['sale'], limit: 10, offset: 0 })).total,
        0,
      );
    });
  });
}

describeDiscoveryContract('SQLite file', async () => tempSqlite());
describeDiscoveryContract('PostgreSQL', () => tempPostgres(), { skip: SKIP_POSTGRES });
