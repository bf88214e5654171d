import type { Kysely, Migration } from 'kysely';

/**
 * x402's `erc20ApprovalGasSponsoring` on EVM: before settling a Permit2 payment the facilitator funds the
 * buyer's gas shortfall and broadcasts the buyer's own signed `approve(Permit2)` transaction.
 *
 * `x402_settlements.sponsored_approval`: that step as claimed, before anything is broadcast (JSON: the
 * buyer's signed approval, the facilitator's signed funding transfer and the amount it moves), so a
 * retry or the settlement finisher after a crash resends exactly these bytes — never a second funding.
 *
 * `x402_sponsored_approvals`: one row per approval (network, buyer, the approval's nonce), inserted in
 * the claim's database transaction: two payments carrying approvals of the same buyer nonce (the same
 * signed transaction, or two signed at once) are never both funded — only one of them can land.
 */
export const x402SponsoredApprovals: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('x402_settlements').addColumn('sponsored_approval', 'text').execute();
    await db.schema
      .createTable('x402_sponsored_approvals')
      .addColumn('approval_key', 'text', (c) => c.primaryKey())
      .addColumn('settlement_key', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
