import { type Kysely, type Migration, sql } from 'kysely';

/**
 * `payments_wallet_status` (wallet_address, status) held every payment, so every payment written touched
 * it — on SQLite a page of the write-ahead log in each receive's commit — while its one reader, a send's
 * unsettled spend (PaymentRepository.unsettledSpend), asks only for payments still pending or submitted.
 * The index keeps those only: a received payment (confirmed when recorded) never enters it, and a send
 * leaves it when it settles. The query names the statuses as literals, which lets SQLite see that the
 * index's condition holds (it cannot for bound parameters); PostgreSQL plans with the values either way.
 */
export const unsettledPaymentsIndex: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.dropIndex('payments_wallet_status').execute();
    await sql`create index payments_unsettled on payments (wallet_address)
      where status in ('pending', 'submitted')`.execute(db);
  },
};
