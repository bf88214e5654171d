import type { Kysely, Migration } from 'kysely';

/**
 * One open receipt per x402 payload in local mode (POST /transaction/receive): the payload's identity
 * names the receipt that answers for it. The primary key decides between two calls at the same
 * instant, on one instance or two; the row is moved to a new receipt only by compare-and-set, once
 * the one it names is no longer pending. Receipts built before this migration are in no row.
 */
export const x402Receipts: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('x402_receipts')
      .addColumn('identity', 'text', (c) => c.primaryKey())
      .addColumn('payment_id', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
