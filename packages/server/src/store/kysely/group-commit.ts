import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../database-schema.ts';

/** A unit of work run inside a shared transaction; `committed` is called only once it is durable. */
interface Pending<T> {
  readonly work: (trx: Transaction<Database>) => Promise<T>;
  readonly resolve: (value: T) => void;
  readonly reject: (error: unknown) => void;
}

/** Enough to cover a burst, small enough that one batch never holds the writer for long. */
const MAX_BATCH = 64;

/**
 * Group commit for SQLite: transactions that arrive while the single writer is busy run together in
 * one database transaction, each inside its own SAVEPOINT (a batch of one needs none), and share one
 * COMMIT and one flush of the log instead of one each (the flush itself runs off the event loop: see
 * WalSync and DurableSqliteDialect).
 *
 * Each unit keeps its own all-or-nothing: a unit that throws is rolled back to its savepoint and its
 * caller gets the error, while the others commit. No caller hears of success before the COMMIT is on
 * disk (the transaction's promise waits for the flush), so "committed" still means durable. If the
 * COMMIT itself fails, every unit of the batch fails with it (none was announced). Units run one after
 * another on the one connection, as they would have anyway; a unit sees the writes of the units before
 * it in its batch, which are committed with it or not at all. A unit must wait on storage only (Store.transaction's rule): one that awaited
 * an RPC call would hold the batch, and SQLite's write lock, until the answer came.
 */
export class GroupCommit {
  private queue: Pending<unknown>[] = [];
  private running = false;

  constructor(private readonly db: Kysely<Database>) {}

  run<T>(work: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve, reject } as Pending<unknown>);
      // At the end of this event-loop turn, not at once: the requests read in this turn reach their
      // transactions in microtasks of the same turn, so waiting for them costs no time and lets them
      // share the commit (26 commits instead of 617 for 300 concurrent sends). Safe because a unit
      // waits on storage only (see above), so a batch still commits within the turn it starts in.
      if (!this.running) {
        this.running = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        await this.commit(batch);
      }
    } finally {
      this.running = false;
    }
  }

  private async commit(batch: Pending<unknown>[]): Promise<void> {
    const [only] = batch;
    if (batch.length === 1 && only !== undefined) {
      // A batch of one needs no savepoint: rolling its transaction back undoes that unit alone.
      await this.db.transaction().execute(only.work).then(only.resolve, only.reject);
      return;
    }
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      await this.db.transaction().execute(async (trx) => {
        for (const [i, unit] of batch.entries()) {
          const savepoint = savepointQueries(i);
          await trx.executeQuery(savepoint.open);
          try {
            const value = await unit.work(trx);
            await trx.executeQuery(savepoint.release);
            // Pushed only now: one outcome per unit, in order, whichever step throws.
            outcomes.push({ ok: true, value });
          } catch (error) {
            // Undoes this unit alone; if even that fails, the whole batch is rolled back below.
            await trx.executeQuery(savepoint.rollback);
            await trx.executeQuery(savepoint.release);
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      for (const unit of batch) unit.reject(error);
      return;
    }
    for (const [i, unit] of batch.entries()) {
      const outcome = outcomes[i];
      if (outcome?.ok === true) unit.resolve(outcome.value);
      else unit.reject(outcome?.error);
    }
  }
}

interface SavepointQueries {
  readonly open: CompiledQuery;
  readonly release: CompiledQuery;
  readonly rollback: CompiledQuery;
}

/** The statements of the savepoint of a batch's i-th unit, made once each (at most MAX_BATCH). */
const savepoints: SavepointQueries[] = [];

function savepointQueries(i: number): SavepointQueries {
  let queries = savepoints[i];
  if (queries === undefined) {
    queries = {
      open: CompiledQuery.raw(`savepoint unit_${i}`),
      release: CompiledQuery.raw(`release unit_${i}`),
      rollback: CompiledQuery.raw(`rollback to unit_${i}`),
    };
    savepoints[i] = queries;
  }
  return queries;
}
