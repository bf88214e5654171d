import type { Kysely } from 'kysely';
import type { Database } from '../database-schema.ts';
import type { EventRecord, EventRepository } from '../store.ts';

export class KyselyEventRepository implements EventRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async append(event: Omit<EventRecord, 'seq'>): Promise<number> {
    const row = await this.db
      .insertInto('events')
      .values({
        id: event.id,
        account_id: event.accountId,
        type: event.type,
        payment_id: event.paymentId,
        data: JSON.stringify(event.data),
        created_at: event.createdAt,
      })
      .returning('seq')
      .executeTakeFirstOrThrow();
    return Number(row.seq);
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
    return rows.map((row) => ({
      seq: Number(row.seq),
      id: row.id,
      accountId: row.account_id,
      type: row.type,
      paymentId: row.payment_id,
      data: JSON.parse(row.data) as Record<string, unknown>,
      createdAt: Number(row.created_at),
    }));
  }
}
