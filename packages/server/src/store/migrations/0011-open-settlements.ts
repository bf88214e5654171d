import type { Kysely, Migration } from 'kysely';

/**
 * The settlement finisher (workers/settlement-finisher.ts) asks every few seconds for the open x402
 * settlements nobody has touched lately; this index answers that without scanning every settlement.
 */
export const openSettlements: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('x402_settlements_open')
      .on('x402_settlements')
      .columns(['status', 'updated_at'])
      .execute();
  },
};
