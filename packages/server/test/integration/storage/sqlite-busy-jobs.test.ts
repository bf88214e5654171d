import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { SettlementFinisher } from '../../../src/workers/settlement-finisher.ts';
import { type TempStorage, tempSqlite } from '../../support/databases.ts';
import { until } from '../../support/until.ts';

/**
 * A background job's write meeting SQLITE_BUSY: another connection (a CLI, a second instance) holds
 * the file's write lock past busy_timeout. The job must log it and write on a later pass; the process
 * must not die of it. The lock is real: a second connection on the same file in BEGIN EXCLUSIVE.
 */
describe('a background job on a SQLite file another connection holds locked', () => {
  let temp: TempStorage;
  let file: string;
  let store: Store;
  let other: Database.Database;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  before(async () => {
    temp = tempSqlite();
    if (temp.location.kind !== 'sqlite') throw new Error('a SQLite location');
    file = temp.location.file;
    // Short, so a pass fails soon after it meets the lock.
    ({ store } = await openStore({ ...temp.location, busyTimeoutMs: 50 }));
    other = new Database(file);
    process.on('unhandledRejection', onUnhandled);
  });
  after(async () => {
    process.off('unhandledRejection', onUnhandled);
    if (other?.inTransaction) other.exec('rollback');
    other?.close();
    await store?.close();
    await temp?.dispose();
  });

  /** The job lease row the finisher's pass writes first; read on the other connection. */
  const leaseOwner = (): string | undefined =>
    (
      other.prepare('select owner from job_leases where name = ?').get('x402-settlement-finisher') as
        | { owner: string }
        | undefined
    )?.owner;

  const lockedPass = async (instanceId: string, log: (error: unknown) => void) => {
    other.exec('delete from job_leases');
    other.exec('begin exclusive');
    const errors: unknown[] = [];
    const finisher = new SettlementFinisher({
      store,
      // No settlement is open, so a pass never reaches the facilitator: the lease write is the job's write.
      facilitator: {
        finish: async () => {
          throw new Error('no settlement is open');
        },
      },
      instanceId,
      settleWaitMs: 1_000,
      intervalMs: 10,
      log: (_message, error) => {
        errors.push(error);
        log(error);
      },
    });
    finisher.start();
    try {
      await until('a pass failing on the lock', async () => errors.length >= 2, 10_000);
      const [first] = errors;
      assert.equal((first as { code?: unknown }).code, 'SQLITE_BUSY');
      assert.equal(leaseOwner(), undefined);
      other.exec('commit');
      await until('a pass writing once the lock is gone', async () => leaseOwner() === instanceId, 10_000);
    } finally {
      if (other.inTransaction) other.exec('rollback');
      await finisher.stop();
    }
    // Passes that failed in a row were retried, not given up on.
    assert.ok(errors.length >= 2, `${errors.length} failed passes`);
  };

  it('logs SQLITE_BUSY and writes on a later pass once the lock is released', async () => {
    await lockedPass('instance-a', () => {});
    assert.deepEqual(unhandled, []);
  });

  it('a transaction that reads before it writes waits busy_timeout for the lock, as one that writes first', async () => {
    // Held on another thread: the store's wait for the lock blocks this one (better-sqlite3 is synchronous).
    const holder = new Worker(
      `const { parentPort, workerData } = require('node:worker_threads');
       const db = new (require(workerData.driver))(workerData.file);
       db.exec('begin exclusive');
       parentPort.postMessage('locked');
       setTimeout(() => { db.exec('commit'); db.close(); }, workerData.holdMs);`,
      {
        eval: true,
        workerData: { file, holdMs: 300, driver: createRequire(import.meta.url).resolve('better-sqlite3') },
      },
    );
    try {
      await once(holder, 'message');
      const { store: waiting } = await openStore({ kind: 'sqlite', file });
      try {
        const started = performance.now();
        await waiting.transaction(async (tx) => {
          await tx.events.lastSeq();
          await tx.jobLeases.claim('read-then-write', 'instance-c', 0, 1);
        });
        const waitedMs = performance.now() - started;
        // A deferred BEGIN failed here at once with SQLITE_BUSY: busy_timeout is not asked on a read's upgrade.
        assert.ok(waitedMs >= 150, `committed after ${waitedMs.toFixed(0)} ms, while the lock was held`);
        // Taking the lock writes nothing: a transaction that only reads leaves the change token as it was.
        const token = waiting.changeToken();
        await waiting.transaction(async (tx) => tx.events.lastSeq());
        assert.equal(waiting.changeToken(), token);
      } finally {
        await waiting.close();
      }
    } finally {
      await holder.terminate();
    }
    assert.equal(
      (
        other.prepare('select owner from job_leases where name = ?').get('read-then-write') as {
          owner: string;
        }
      ).owner,
      'instance-c',
    );
  });

  it('a log that throws on the failure neither ends the process nor stops the job', async () => {
    await lockedPass('instance-b', () => {
      throw new Error('the log could not be written');
    });
    // Without the guard in PeriodicWorker each of those failed passes is an unhandled rejection.
    assert.deepEqual(unhandled, []);
  });
});
