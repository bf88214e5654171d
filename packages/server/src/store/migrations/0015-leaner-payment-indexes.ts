import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Every index of `payments` is written by every payment insert, and on SQLite each one touched is a page
 * of the write-ahead log at the commit (a receive's commit wrote ~20). Three of them did nothing a query
 * needs:
 * - `payments_reference`: no query reads payments by reference (a local-mode payment is found on chain by
 *   its reference, and in storage by its id);
 * - `payments_open` (status, lease_until): the lease query of open payments filters by status and orders
 *   by created_at, which `payments_status_updated` (status, updated_at) serves as well — the OR on
 *   lease_until could never be an index range;
 * - `payments_idempotency` held a row for every payment, though only those with an Idempotency-Key can
 *   collide: it keeps its uniqueness for those, and only those (a lookup by key implies a key).
 */
export const leanerPaymentIndexes: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.dropIndex('payments_reference').execute();
    await db.schema.dropIndex('payments_open').execute();
    await db.schema.dropIndex('payments_idempotency').execute();
    await sql`create unique index payments_idempotency on payments (account_id, idempotency_key)
      where idempotency_key is not null`.execute(db);
  },
};
