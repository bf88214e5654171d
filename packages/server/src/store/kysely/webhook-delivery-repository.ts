import { expressionBuilder, type Kysely, type Selectable } from 'kysely';
import type {
  DeliveryAttempt,
  DeliveryStatus,
  WebhookDeliveryRecord,
} from '../../domain/records/event-records.ts';
import type { Database, WebhookDeliveriesTable } from '../database-schema.ts';
import type { WebhookDeliveryRepository } from '../store.ts';
import { leaseRows } from './lease-rows.ts';

export class KyselyWebhookDeliveryRepository implements WebhookDeliveryRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async claimCursor(name: string): Promise<number> {
    // A no-op update is a write: it takes the row lock (PostgreSQL) or the write lock (SQLite) first,
    // so two instances fanning out at once run one after the other instead of both reading the cursor.
    const row = await this.db
      .updateTable('outbox_cursors')
      .set((eb) => ({ seq: eb.ref('seq') }))
      .where('name', '=', name)
      .returning('seq')
      .executeTakeFirst();
    if (row !== undefined) return Number(row.seq);
    await this.db
      .insertInto('outbox_cursors')
      .values({ name, seq: 0 })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    return this.claimCursor(name);
  }

  async advanceCursor(name: string, seq: number): Promise<void> {
    await this.db.updateTable('outbox_cursors').set({ seq }).where('name', '=', name).execute();
  }

  async insertMany(deliveries: readonly WebhookDeliveryRecord[]): Promise<void> {
    if (deliveries.length === 0) return;
    await this.db
      .insertInto('webhook_deliveries')
      .values(
        deliveries.map((d) => ({
          id: d.id,
          webhook_id: d.webhookId,
          account_id: d.accountId,
          event_id: d.eventId,
          event_seq: d.eventSeq,
          status: d.status,
          attempts: d.attempts,
          next_attempt_at: d.nextAttemptAt,
          lease_owner: null,
          lease_until: null,
          last_status_code: d.lastStatusCode,
          last_error: d.lastError,
          last_attempt_at: d.lastAttemptAt,
          delivered_at: d.deliveredAt,
          created_at: d.createdAt,
        })),
      )
      .onConflict((oc) => oc.columns(['webhook_id', 'event_id']).doNothing())
      .execute();
  }

  async get(id: string): Promise<WebhookDeliveryRecord | undefined> {
    const row = await this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toDelivery(row);
  }

  async listByWebhook(webhookId: string, limit: number): Promise<WebhookDeliveryRecord[]> {
    const rows = await this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('webhook_id', '=', webhookId)
      .orderBy('event_seq', 'desc')
      .limit(limit)
      .execute();
    return rows.map(toDelivery);
  }

  async leaseDue(owner: string, now: number, until: number, limit: number): Promise<WebhookDeliveryRecord[]> {
    const eb = expressionBuilder<Database, 'webhook_deliveries'>();
    const rows = await leaseRows(this.db, {
      table: 'webhook_deliveries',
      // Also checked when each is taken: one that succeeded meanwhile (its lease ended) is not sent again.
      eligible: eb.and([eb('status', '=', 'pending'), eb('next_attempt_at', '<=', now)]),
      orderBy: 'next_attempt_at',
      owner,
      now,
      until,
      limit,
    });
    return rows.map(toDelivery);
  }

  async recordAttempt(id: string, owner: string, attempt: DeliveryAttempt): Promise<boolean> {
    const result = await this.db
      .updateTable('webhook_deliveries')
      .set({
        status: attempt.status,
        attempts: attempt.attempts,
        next_attempt_at: attempt.nextAttemptAt,
        last_status_code: attempt.lastStatusCode,
        last_error: attempt.lastError,
        last_attempt_at: attempt.lastAttemptAt,
        delivered_at: attempt.deliveredAt,
        lease_owner: null,
        lease_until: null,
      })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async release(id: string, owner: string): Promise<boolean> {
    const result = await this.db
      .updateTable('webhook_deliveries')
      .set({ lease_owner: null, lease_until: null })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async redeliver(id: string, now: number): Promise<WebhookDeliveryRecord | undefined> {
    // The lease is left as it is: an attempt in flight keeps it and records its outcome, standing in for
    // this redeliver; freeing it would let another worker send the same delivery at the same time.
    const row = await this.db
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', next_attempt_at: now })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return row && toDelivery(row);
  }

  async nextDueAt(): Promise<number | undefined> {
    // A delivery another worker is attempting stays pending with its next_attempt_at in the past until
    // the attempt is recorded (up to the lease, 15 s for a worker that died mid-attempt): it is due
    // when the lease ends, not now, or every other instance would look again every few milliseconds.
    const row = await this.db
      .selectFrom('webhook_deliveries')
      .select((eb) =>
        eb.fn
          .min(
            eb
              .case()
              .when(
                eb.and([
                  eb('lease_until', 'is not', null),
                  eb('lease_until', '>', eb.ref('next_attempt_at')),
                ]),
              )
              .then(eb.ref('lease_until'))
              .else(eb.ref('next_attempt_at'))
              .end(),
          )
          .as('at'),
      )
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return row?.at === null || row?.at === undefined ? undefined : Number(row.at);
  }

  async deleteFinishedBefore(before: number, limit: number): Promise<number> {
    const result = await this.db
      .deleteFrom('webhook_deliveries')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('webhook_deliveries as d')
          .select('d.id')
          .where('d.status', 'in', ['succeeded', 'failed'])
          .where('d.created_at', '<', before)
          .orderBy('d.created_at', 'asc')
          .limit(limit),
      )
      // A redeliver may have made it pending since it was picked: it needs its event again.
      .where('status', 'in', ['succeeded', 'failed'])
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

function toDelivery(row: Selectable<WebhookDeliveriesTable>): WebhookDeliveryRecord {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    accountId: row.account_id,
    eventId: row.event_id,
    eventSeq: Number(row.event_seq),
    status: row.status as DeliveryStatus,
    attempts: Number(row.attempts),
    nextAttemptAt: nullableNumber(row.next_attempt_at),
    lastStatusCode: nullableNumber(row.last_status_code),
    lastError: row.last_error,
    lastAttemptAt: nullableNumber(row.last_attempt_at),
    deliveredAt: nullableNumber(row.delivered_at),
    createdAt: Number(row.created_at),
  };
}

function nullableNumber(value: number | string | null): number | null {
  return value === null ? null : Number(value);
}
