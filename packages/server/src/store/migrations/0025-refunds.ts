import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Refunds (#30, services/payments/refunds/):
 * - `payments.refund_of`: on a refund (a sent payment back to the payer of a received one), the id of
 *   the payment it refunds; null on every other payment. `payments.refund_reason`: the caller's reason.
 * - `payments_refund_of`: the refunds of one payment, read to sum what was refunded (partial: only
 *   refunds have the column set).
 * - `refund_locks`: one row per refunded payment, written first in the transaction that sums its
 *   refunds and records a new one. On PostgreSQL the row lock, held to commit, serialises those
 *   transactions across gateway instances, so two refunds never both see room only one fits in; SQLite
 *   has one writer, which the write takes before the sum is read. The same pattern as spend_locks (0022).
 */
export const refunds: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('payments').addColumn('refund_of', 'text').execute();
    await db.schema.alterTable('payments').addColumn('refund_reason', 'text').execute();
    await sql`create index payments_refund_of on payments (refund_of) where refund_of is not null`.execute(
      db,
    );
    await db.schema
      .createTable('refund_locks')
      .addColumn('payment_id', 'text', (c) => c.primaryKey())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
