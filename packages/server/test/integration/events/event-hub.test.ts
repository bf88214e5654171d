import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../../src/domain/ids.ts';
import { EventHub } from '../../../src/events/event-hub.ts';
import { SingleInstanceEventSignal } from '../../../src/events/event-signal.ts';
import { RedisEventSignal } from '../../../src/events/redis-event-signal.ts';
import { openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { anEvent } from '../../contract/event-store-contract.ts';
import {
  REDIS_URL,
  SKIP_POSTGRES,
  SKIP_REDIS,
  type TempStorage,
  tempPostgres,
  tempSqlite,
} from '../../support/databases.ts';
import { aTestAccount } from '../../support/test-account.ts';

/**
 * The hub dispatches this instance's committed events as the commit hands them over, without reading
 * them back, and falls back to reading the outbox whenever that could skip or repeat one.
 */
for (const [name, temp, skip] of [
  ['SQLite file', async () => tempSqlite(), false],
  ['PostgreSQL', tempPostgres, SKIP_POSTGRES],
] as const) {
  describe(`EventHub on ${name}: this instance's own commits`, { skip }, () => {
    let storage: TempStorage;
    let store: Store;
    /** Another instance on the same storage. */
    let other: Store;
    let hub: EventHub;
    let accountId: string;
    let reads = 0;
    let advances = 0;
    const seen: string[] = [];

    before(async () => {
      storage = await temp();
      store = (await openStore(storage.location)).store;
      other = (await openStore(storage.location)).store;
      accountId = newId('acct');
      await store.accounts.insert(aTestAccount(accountId));
      const listAllAfter = store.events.listAllAfter.bind(store.events);
      store.events.listAllAfter = (afterSeq, limit) => {
        reads++;
        return listAllAfter(afterSeq, limit);
      };
      hub = new EventHub({ store, signal: new SingleInstanceEventSignal(), pollIntervalMs: 60_000 });
      await hub.start();
      hub.subscribe(accountId, (event) => seen.push(event.id));
      hub.onAdvance(() => advances++);
    });

    after(async () => {
      await hub?.stop();
      await other?.close();
      await store?.close();
      await storage?.dispose();
    });

    const commit = (on: Store) => {
      const event = anEvent(accountId);
      return on.transaction((tx) => tx.events.append(event)).then(() => event.id);
    };

    const until = async (condition: () => boolean) => {
      for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
    };

    it('dispatches them in seq order as they commit, without reading the outbox', async () => {
      seen.length = 0;
      const [readsBefore, advancesBefore] = [reads, advances];
      const one = await commit(store);
      assert.deepEqual(seen, [one], 'dispatched by the time the commit resolves');
      const concurrent = await Promise.all(Array.from({ length: 6 }, () => commit(store)));
      const lastSeq = await store.events.lastSeq();
      assert.equal(reads, readsBefore, 'the outbox was not read');
      const inSeqOrder = (await other.events.listAllAfter(0, 100)).map((e) => e.id);
      assert.deepEqual(seen, inSeqOrder.slice(inSeqOrder.indexOf(one)));
      assert.deepEqual(new Set(seen), new Set([one, ...concurrent]));
      assert.equal(hub.position, lastSeq);
      assert.ok(advances > advancesBefore, 'the webhook fan-out is woken');
    });

    it('reads the outbox at a gap: another instance’s event first, then its own, each once', async () => {
      seen.length = 0;
      const readsBefore = reads;
      const theirs = await commit(other);
      const mine = await commit(store);
      await until(() => seen.length >= 2);
      assert.deepEqual(seen, [theirs, mine]);
      assert.ok(reads > readsBefore, 'read, since an event came before its own');
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(seen, [theirs, mine], 'and nothing twice');
    });

    it('holds its commits during a read and dispatches each once after it', async () => {
      seen.length = 0;
      const theirs = await commit(other);
      hub.wake();
      const mine = await Promise.all(Array.from({ length: 4 }, () => commit(store)));
      await until(() => seen.length >= 5);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(seen[0], theirs);
      assert.deepEqual(new Set(seen.slice(1)), new Set(mine));
      assert.equal(seen.length, 5, 'each once');
      assert.equal(hub.position, await store.events.lastSeq());
    });
  });
}

describe('RedisEventSignal', { skip: SKIP_REDIS }, () => {
  it('wakes every other instance, not the one that published', async () => {
    const channel = `gate402:test:${randomUUID()}`;
    const [a, b] = [
      new RedisEventSignal(REDIS_URL ?? '', channel),
      new RedisEventSignal(REDIS_URL ?? '', channel),
    ];
    await Promise.all([a.connect(), b.connect()]);
    try {
      const heard = { a: 0, b: 0 };
      a.subscribe(() => heard.a++);
      b.subscribe(() => heard.b++);
      a.publish();
      for (let i = 0; i < 200 && heard.b === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      b.publish();
      for (let i = 0; i < 200 && heard.a === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      // Each message has reached both subscribers by now (one connection each, in order); wait a little more.
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.deepEqual(heard, { a: 1, b: 1 });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
