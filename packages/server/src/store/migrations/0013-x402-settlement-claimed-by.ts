import type { Kysely, Migration } from 'kysely';

/**
 * The POST /payment/receive that claimed an x402 settlement: its account and Idempotency-Key, stored
 * with the claim, before the first broadcast, so a crash cannot lose them. The payment recorded when the
 * settlement settles — by that request, or later by the settlement finisher — carries the key, so the
 * request retried with it finds that payment instead of being refused the payload it settled itself.
 * Null for settlements claimed through /facilitator/settle, without a key, or before this migration.
 */
export const x402SettlementClaimedBy: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('x402_settlements').addColumn('claimed_by_account_id', 'text').execute();
    await db.schema.alterTable('x402_settlements').addColumn('claimed_by_idempotency_key', 'text').execute();
  },
};
