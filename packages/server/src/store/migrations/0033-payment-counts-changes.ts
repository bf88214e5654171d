import { type Kysely, type Migration, sql } from 'kysely';

/**
 * `payment_counts.changes`: how many times a payment of the wallet and direction changed, after its
 * insert, what its history shows (status, signature, amount). With `n` (which every insert raises) it is
 * the version a history page is kept under (services/payments/history-page-cache.ts): `n + changes`, summed
 * over the wallet's directions, only ever grows, and every write that changes a page raises it in its own
 * transaction, so an instance that reads it before a page knows, from one row per direction, whether
 * the page it rendered earlier is still what storage holds — whichever instance wrote.
 *
 * A row that already counts inserts, not a row of its own: a payment's insert locks it already (on
 * PostgreSQL, until commit), so inserts take no new lock; a state change now takes the same one.
 */
export const paymentCountsChanges: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('payment_counts')
      .addColumn('changes', 'bigint', (c) => c.notNull().defaultTo(sql`0`))
      .execute();
  },
};
