import type { Kysely, Migration } from 'kysely';

/**
 * The resource an x402 settlement paid for: the one the seller named to POST /payment/receive, else the
 * one the payment names (v2 `resource.url`, v1 requirements' `resource`). Stored with the claim, so the
 * seller's payment — recorded by the settling request or later by the settlement finisher — carries it
 * (spec §2.1: `resource` is present when supplied). Null when neither named one, and before this migration.
 */
export const x402SettlementResource: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('x402_settlements').addColumn('resource', 'text').execute();
  },
};
