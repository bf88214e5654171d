import assert from 'node:assert/strict';
import { fdatasync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { EventHub } from '../../../src/events/event-hub.ts';
import { SingleInstanceEventSignal } from '../../../src/events/event-signal.ts';
import type { KyselyStore } from '../../../src/store/kysely/kysely-store.ts';
import { createKysely, openStore } from '../../../src/store/open-store.ts';
import { type SyncFile, WalSync } from '../../../src/store/wal-sync.ts';
import { tempDir } from '../../support/databases.ts';
import { aTestAccount } from '../../support/test-account.ts';
import { aTestPayment } from '../../support/test-payment.ts';

/** A flush the test lets finish when it chooses; each call is recorded. */
function heldFlushes() {
  const calls: { fd: number; finish: (error?: Error) => void }[] = [];
  const syncFile: SyncFile = (fd) =>
    new Promise((resolve, reject) => {
      calls.push({ fd, finish: (error) => (error === undefined ? resolve() : reject(error)) });
    });
  /** Waits (at most 5 s) until `count` flushes have begun: opening the log takes a trip to the thread pool. */
  const begun = async (count: number) => {
    for (let waited = 0; calls.length < count && waited < 5_000; waited += 5) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(calls.length, count, `${count} flushes begun`);
  };
  return { calls, syncFile, begun };
}

/** Whether `promise` has settled once the event loop has turned a few times. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('WalSync: commits are flushed off the event loop, coalesced', () => {
  const dir = tempDir();
  after(() => dir.dispose());
  const file = join(dir.path, 'log');

  it('resolves only after a flush that began after the call, and shares one flush among later callers', async () => {
    writeFileSync(file, 'x');
    const flushes = heldFlushes();
    const wal = new WalSync(file, flushes.syncFile);
    const first = wal.durable();
    await flushes.begun(1);
    // Commits made while that flush runs may not be in it: their callers wait for the next one, together.
    const later = [wal.durable(), wal.durable(), wal.durable()];
    assert.equal(await settled(Promise.race(later)), false);
    flushes.calls[0]?.finish();
    await first;
    await flushes.begun(2);
    assert.equal(await settled(Promise.race(later)), false, 'not before their own flush finishes');
    flushes.calls[1]?.finish();
    await Promise.all(later);
    assert.equal(flushes.calls.length, 2);
    await wal.close();
  });

  it('fails the callers of a flush that fails, and flushes again for the next', async () => {
    const flushes = heldFlushes();
    const wal = new WalSync(file, flushes.syncFile);
    const failing = wal.durable();
    await flushes.begun(1);
    flushes.calls[0]?.finish(new Error('EIO'));
    await assert.rejects(failing, /EIO/);
    const next = wal.durable();
    await flushes.begun(2);
    flushes.calls[1]?.finish();
    await next;
    await wal.close();
  });

  it('fails a caller whose log cannot be opened, and opens it at the next flush', async () => {
    const missing = join(dir.path, 'not-yet');
    const flushes = heldFlushes();
    const wal = new WalSync(missing, flushes.syncFile);
    await assert.rejects(wal.durable(), /ENOENT/);
    writeFileSync(missing, 'x');
    const next = wal.durable();
    await flushes.begun(1);
    flushes.calls[0]?.finish();
    await next;
    await wal.close();
  });
});

describe('SQLite store: a write is answered only once its commit is on disk', () => {
  const dir = tempDir();
  const file = join(dir.path, 'gate402.sqlite');
  const flushes = heldFlushes();
  let store: KyselyStore;
  let hold = false;

  before(async () => {
    // Held while `hold` is set; otherwise the real fdatasync, so migrations and setup go through.
    const syncFile: SyncFile = (fd) =>
      hold
        ? flushes.syncFile(fd)
        : new Promise((resolve, reject) => fdatasync(fd, (e) => (e ? reject(e) : resolve())));
    ({ store } = await openStore({ kind: 'sqlite', file }, { syncFile }));
    await store.accounts.insert(aTestAccount('acct_a'));
  });

  after(async () => {
    hold = false;
    for (const call of flushes.calls) call.finish();
    await store.close();
    dir.dispose();
  });

  it('runs the connection with synchronous = NORMAL, the log flushed by the gateway instead', async () => {
    const db = await createKysely({ kind: 'sqlite', file });
    try {
      const { rows } = await sql<{ synchronous: number }>`pragma synchronous`.execute(db);
      assert.equal(rows[0]?.synchronous, 1);
      // And group commit's savepoint journals in memory, not in temporary files (open-store.ts).
      const temp = await sql<{ temp_store: number }>`pragma temp_store`.execute(db);
      assert.equal(temp.rows[0]?.temp_store, 2);
    } finally {
      await db.destroy();
    }
  });

  it('holds a transaction until its flush, flushing the database file’s own log, while reads go on', async () => {
    hold = true;
    const payment = aTestPayment(Date.now(), 'acct_a');
    const before = flushes.calls.length;
    const written = store.transaction((tx) => tx.payments.insert(payment));
    await flushes.begun(before + 1);
    assert.equal(await settled(written), false, 'not answered before the flush');
    const call = flushes.calls[before];
    assert.ok(call);
    assert.equal(readlinkSync(`/proc/self/fd/${call.fd}`), `${file}-wal`);
    // The connection is free while the log is flushed: another request reads (and sees the commit).
    assert.equal((await store.payments.get(payment.id))?.id, payment.id);
    call.finish();
    await written;
  });

  it('holds a single statement outside a transaction (it commits by itself) the same way', async () => {
    hold = true;
    const before = flushes.calls.length;
    const written = store.accounts.insert(aTestAccount('acct_b'));
    await flushes.begun(before + 1);
    assert.equal(await settled(written), false);
    flushes.calls[before]?.finish();
    await written;
  });

  it('flushes nothing for reads and read-only transactions', async () => {
    hold = true;
    const before = flushes.calls.length;
    await store.accounts.get('acct_a');
    await store.transaction((tx) => tx.accounts.get('acct_a'));
    assert.equal(flushes.calls.length, before);
  });

  it('pushes an event from the outbox to a listener only once it is on disk', async () => {
    hold = false;
    const hub = new EventHub({ store, signal: new SingleInstanceEventSignal(), pollIntervalMs: 60_000 });
    await hub.start();
    const seen: string[] = [];
    const unsubscribe = hub.subscribe('acct_a', (event) => seen.push(event.id));
    try {
      // Written as another instance on the same file would: its commit is readable here before this
      // instance's flush has covered it.
      const other = await openStore({ kind: 'sqlite', file });
      await other.store.events.append({
        id: 'evt_1',
        accountId: 'acct_a',
        type: 'payment.received',
        paymentId: null,
        data: {},
        createdAt: Date.now(),
      });
      await other.store.close();
      hold = true;
      const before = flushes.calls.length;
      hub.wake();
      await flushes.begun(before + 1);
      await settled(Promise.resolve());
      assert.deepEqual(seen, [], 'and pushed nothing before it finished');
      flushes.calls[before]?.finish();
      for (let i = 0; i < 50 && seen.length === 0; i++) await settled(Promise.resolve());
      assert.deepEqual(seen, ['evt_1']);
    } finally {
      unsubscribe();
      await hub.stop();
    }
  });
});
