import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/domain/ids.ts';
import type { DiscoveryRecord } from '../../src/domain/records/discovery-records.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { Store } from '../../src/store/store.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../support/databases.ts';
import { aTestAccount } from '../support/test-account.ts';

/** A bound of `maxPerAccount` new resources per account, nothing stale. */
const room = (maxPerAccount: number) => ({ maxPerAccount, staleBefore: 0 });

/** The bazaar catalogue's repository (migrations 0023, 0032), the same assertions on SQLite and PostgreSQL. */
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
      iconUrl: 'https://shop.example/icon.png',
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
      assert.equal(await store.discovery.upsert(resource(a), room(10)), true);
      const first = await store.discovery.list({ updatedSince: 0, accountId: a, limit: 10, offset: 0 });
      assert.deepEqual(first, { items: [resource(a)], total: 1 });
      const later = resource(a, {
        description: 'Weather, now hourly',
        tags: null,
        createdAt: 2_000,
        updatedAt: 2_000,
      });
      assert.equal(await store.discovery.upsert(later, room(10)), true);
      const { items, total } = await store.discovery.list({
        updatedSince: 0,
        accountId: a,
        limit: 10,
        offset: 0,
      });
      assert.equal(total, 1);
      assert.deepEqual(items[0], { ...later, createdAt: 1_000 });
    });

    it('keeps at most the bound of new resources per account; an update needs no room; accounts are apart', async () => {
      const other = (n: number) =>
        resource(a, { resource: `https://shop.example/r${n}`, updatedAt: 3_000 + n });
      assert.equal(await store.discovery.upsert(other(1), room(2)), true);
      assert.equal(await store.discovery.upsert(other(2), room(2)), false, 'the account holds 2: full');
      assert.equal(await store.discovery.upsert({ ...other(1), description: 'again' }, room(2)), true);
      assert.equal(await store.discovery.upsert(resource(b), room(1)), true, "b's room is b's own");
      // An MCP tool of the same URL is another resource.
      assert.equal(
        await store.discovery.upsert(resource(b, { tool: 'forecast', type: 'mcp' }), room(2)),
        true,
      );
      assert.equal(
        (await store.discovery.list({ updatedSince: 0, accountId: b, limit: 10, offset: 0 })).total,
        2,
      );
    });

    it('lists newest first, filters exactly, pages with the total, and over all accounts without one', async () => {
      const all = await store.discovery.list({ updatedSince: 0, limit: 100, offset: 0 });
      assert.equal(all.total, 4);
      const times = all.items.map((i) => i.updatedAt);
      assert.deepEqual(
        times,
        [...times].sort((x, y) => y - x),
      );
      assert.equal(
        (await store.discovery.list({ updatedSince: 0, type: 'mcp', limit: 10, offset: 0 })).total,
        1,
      );
      assert.equal(
        (await store.discovery.list({ updatedSince: 0, network: 'eip155:1', limit: 10, offset: 0 })).total,
        0,
      );
      assert.equal(
        (await store.discovery.list({ updatedSince: 0, payTo: 'PayToAddress111', limit: 10, offset: 0 }))
          .total,
        4,
      );
      assert.equal(
        (await store.discovery.list({ updatedSince: 0, scheme: 'upto', limit: 10, offset: 0 })).total,
        0,
      );
      const page = await store.discovery.list({ updatedSince: 0, limit: 1, offset: 3 });
      assert.deepEqual([page.items.length, page.total], [1, 4]);
      assert.deepEqual(await store.discovery.list({ updatedSince: 0, limit: 10, offset: 4 }), {
        items: [],
        total: 4,
      });
    });

    it('searches for every word as literal text: % and _ match only themselves', async () => {
      await store.discovery.upsert(
        resource(b, {
          resource: 'https://odd.example/100%_off',
          searchText: 'https://odd.example/100%_off sale',
        }),
        room(10),
      );
      const words = async (...w: string[]) =>
        (await store.discovery.list({ updatedSince: 0, words: w, limit: 10, offset: 0 })).items.map(
          (i) => i.resource,
        );
      assert.deepEqual(await words('100%_off'), ['https://odd.example/100%_off']);
      assert.deepEqual(await words('100%'), ['https://odd.example/100%_off']);
      assert.deepEqual(await words('%'), ['https://odd.example/100%_off']);
      assert.deepEqual(await words('_'), ['https://odd.example/100%_off']);
      assert.deepEqual(await words('1_0'), [], '_ is not any character');
      assert.deepEqual(await words('o%f'), [], '% is not any text');
      assert.deepEqual(await words('sale', 'odd'), ['https://odd.example/100%_off']);
      assert.deepEqual(await words('sale', 'weather'), []);
      assert.equal(
        (await store.discovery.list({ updatedSince: 0, accountId: a, words: ['sale'], limit: 10, offset: 0 }))
          .total,
        0,
      );
    });

    it('counts new resources of one account arriving at once one after another: the bound is exact', async () => {
      const c = newId('acct');
      await store.accounts.insert(aTestAccount(c));
      const outcomes = await Promise.all(
        Array.from({ length: 12 }, (_, n) =>
          store.discovery.upsert(resource(c, { resource: `https://burst.example/r${n}` }), room(3)),
        ),
      );
      assert.equal(outcomes.filter(Boolean).length, 3, JSON.stringify(outcomes));
      assert.equal(
        (await store.discovery.list({ updatedSince: 0, accountId: c, limit: 100, offset: 0 })).total,
        3,
      );
    });

    it('does not list stale resources, frees their room and deletes them when the account adds a new one', async () => {
      const d = newId('acct');
      await store.accounts.insert(aTestAccount(d));
      const at = (n: number, updatedAt: number) =>
        resource(d, { resource: `https://stale.example/r${n}`, createdAt: updatedAt, updatedAt });
      assert.equal(await store.discovery.upsert(at(1, 100), room(2)), true);
      assert.equal(await store.discovery.upsert(at(2, 200), room(2)), true);
      const listed = async (since: number) =>
        (await store.discovery.list({ updatedSince: since, accountId: d, limit: 10, offset: 0 })).items.map(
          (i) => i.resource,
        );
      assert.deepEqual(await listed(150), ['https://stale.example/r2'], 'r1 is older than the listing keeps');
      assert.equal(
        await store.discovery.upsert(at(3, 300), { maxPerAccount: 2, staleBefore: 150 }),
        true,
        'r1 is stale: its room is free',
      );
      assert.deepEqual(
        await listed(0),
        ['https://stale.example/r3', 'https://stale.example/r2'],
        'r1 was deleted',
      );
      assert.equal(await store.discovery.upsert(at(4, 400), { maxPerAccount: 2, staleBefore: 150 }), false);
      // A stale resource paid for again is listed again (an update needs no room).
      assert.equal(await store.discovery.upsert(at(2, 500), { maxPerAccount: 2, staleBefore: 450 }), true);
      assert.deepEqual(await listed(450), ['https://stale.example/r2']);
    });
  });
}

describeDiscoveryContract('SQLite file', async () => tempSqlite());
describeDiscoveryContract('PostgreSQL', () => tempPostgres(), { skip: SKIP_POSTGRES });
