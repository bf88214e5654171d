import { type Kysely, type Migration, sql } from 'kysely';

/**
 * The finality watch (workers/finality-watch.ts) looks up the x402 settlement behind a confirmed
 * facilitator payment whose transaction left the chain, to broadcast its stored signed bytes again.
 * Only settled rows carry a payment id, so the index holds those only; SQLite uses a partial index on
 * `payment_id is not null` for `payment_id = ?`, which implies it.
 */
export const settlementsByPayment: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`create index x402_settlements_payment on x402_settlements (payment_id)
      where payment_id is not null`.execute(db);
  },
};
