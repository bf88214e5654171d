import { type Insertable, type Kysely, PostgresAdapter, type Selectable, sql } from 'kysely';
import type { EventHeader, EventRecord } from '../../domain/records/event-records.ts';
import type { Database, EventsTable } from '../database-schema.ts';
import type { EventRepository } from '../store.ts';
import { compiledInsertOnce } from './compiled-query.ts';

/** Every payment change appends one of these: compiled once (see compiledInsertOnce). */
const insertEvent = compiledInsertOnce(
  [
    'id',
    'account_id',
    'type',
    'payment_id',
    'data',
    'created_at',
  ] satisfies (keyof Insertable<EventsTable>)[],
  (db: Kysely<Database>, row: Insertable<EventsTable>) =>
    db.insertInto('events').values(row).returning('seq').compile(),
);

/**
 * The outbox on SQL.
 *
 * Readers resume "after seq N" (the stream, the webhook fan-out), which is only gap-free if seqs
 * become visible in the order they were assigned. SQLite has one writer at a time, so its seqs commit
 * in order. PostgreSQL takes a sequence value when the row is inserted, and two transactions may commit
 * in the other order: a reader could see seq 8, move its cursor past 7, and then 7 commits. So on
 * PostgreSQL `append` first takes a transaction-scoped advisory lock (one per schema), held until the
 * appending transaction commits or rolls back: transactions that append events commit one after the
 * other, and a seq is visible only after every smaller seq is committed (or rolled back, leaving a
 * harmless hole). The lock is held only from the append to the commit: the ledger appends its event as
 * the last write of each transaction, so this serialises milliseconds, not whole payments. We chose this
 * over snapshot-xmin tracking or re-read windows because the resume position stays one plain number
 * that any instance, webhook cursor or client can compare.
 */
export class KyselyEventRepository implements EventRepository {
  constructor(
    private readonly db: Kysely<Database>,
    /** Told each event appended, so the store can hand them to listeners once the transaction commits. */
    private readonly appended: (event: EventRecord) => void = () => {},
  ) {}

  async append(event: Omit<EventRecord, 'seq'>): Promise<number> {
    if (isPostgres(this.db) && !this.db.isTransaction) {
      // The lock must be taken in the inserting transaction; listeners are told after its commit.
      const seq = await this.db
        .transaction()
        .execute((trx) => new KyselyEventRepository(trx, () => {}).append(event));
      this.appended({ ...event, seq });
      return seq;
    }
    if (isPostgres(this.db)) {
      // Key space 4020 ("gate402" outbox), one lock per schema so separate deployments do not wait on each other.
      await sql`select pg_advisory_xact_lock(4020, hashtext(current_schema()))`.execute(this.db);
    }
    const { rows } = await insertEvent(this.db, {
      id: event.id,
      account_id: event.accountId,
      type: event.type,
      payment_id: event.paymentId,
      data: JSON.stringify(event.data),
      created_at: event.createdAt,
    });
    const seq = rows[0]?.seq;
    if (seq === undefined) throw new Error('the event insert returned no seq');
    this.appended({ ...event, seq: Number(seq) });
    return Number(seq);
  }

  async listAfter(accountId: string, afterSeq: number, limit: number): Promise<EventRecord[]> {
    const rows = await this.db
      .selectFrom('events')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('seq', '>', afterSeq)
      .orderBy('seq', 'asc')
      .limit(limit)
      .execute();
    return rows.map(toEvent);
  }

  async listAllAfter(afterSeq: number, limit: number): Promise<EventRecord[]> {
    const rows = await this.db
      .selectFrom('events')
      .selectAll()
      .where('seq', '>', afterSeq)
      .orderBy('seq', 'asc')
      .limit(limit)
      .execute();
    return rows.map(toEvent);
  }

  async listHeadersAfter(afterSeq: number, limit: number): Promise<EventHeader[]> {
    const rows = await this.db
      .selectFrom('events')
      .select(['seq', 'id', 'account_id', 'type', 'payment_id', 'created_at'])
      .where('seq', '>', afterSeq)
      .orderBy('seq', 'asc')
      .limit(limit)
      .execute();
    return rows.map(toHeader);
  }

  async seqOf(accountId: string, id: string): Promise<number | undefined> {
    const row = await this.db
      .selectFrom('events')
      .select('seq')
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row === undefined ? undefined : Number(row.seq);
  }

  async deleteBefore(before: number, keepAfterCursor: string, limit: number): Promise<number> {
    const result = await this.db
      .deleteFrom('events')
      .where('seq', 'in', (eb) =>
        eb
          .selectFrom('events as e')
          .select('e.seq')
          .where('e.created_at', '<', before)
          .where('e.seq', '<=', (sub) =>
            sub.selectFrom('outbox_cursors').select('outbox_cursors.seq').where('name', '=', keepAfterCursor),
          )
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_seq', '=', 'e.seq'),
              ),
            ),
          )
          .orderBy('e.seq', 'asc')
          .limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async lastSeq(): Promise<number> {
    const row = await this.db
      .selectFrom('events')
      .select((eb) => eb.fn.max('seq').as('seq'))
      .executeTakeFirst();
    return Number(row?.seq ?? 0);
  }
}

function toHeader(row: Omit<Selectable<EventsTable>, 'data'>): EventHeader {
  return {
    seq: Number(row.seq),
    id: row.id,
    accountId: row.account_id,
    type: row.type,
    paymentId: row.payment_id,
    createdAt: Number(row.created_at),
  };
}

function toEvent(row: Selectable<EventsTable>): EventRecord {
  return { ...toHeader(row), data: JSON.parse(row.data) as Record<string, unknown> };
}

function isPostgres(db: Kysely<Database>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
