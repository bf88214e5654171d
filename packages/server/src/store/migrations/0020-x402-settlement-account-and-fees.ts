import type { Kysely, Migration } from 'kysely';

/**
 * Who a settlement is for, and what its network fee costs whom.
 *
 * `account_id`: the account whose API key asked to settle (POST /facilitator/settle, or POST
 * /payment/receive through the built-in facilitator), stored with the claim, before the first
 * broadcast, so the payment is recorded for that same account by whichever writer settles it — the
 * request, a retry, or the settlement finisher after a crash. Null for settlements claimed before this
 * migration: their payment is recorded for nobody but a claiming /payment/receive account (see
 * FacilitatorService.recorderOf), never for whoever happens to hold the payTo address.
 *
 * `sponsored_fee` / `fee_day`: the network fee the facilitator's fee payer pays for it, charged to the
 * account's daily budget of that UTC day — the worst case when claimed, the fee it actually paid once
 * it lands, nothing once it can never land. Null before this migration (no budget was kept then).
 *
 * `x402_sponsored_fees`: per account, network and UTC day, the sum of those fees (atomic units of the
 * network's native currency, as text: wei sums outgrow a 64-bit integer). The claim reserves into it in
 * the same database transaction that inserts the settlement, so concurrent settles of one account cannot
 * overspend the budget together.
 */
export const x402SettlementAccountAndFees: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('x402_settlements').addColumn('account_id', 'text').execute();
    await db.schema.alterTable('x402_settlements').addColumn('sponsored_fee', 'text').execute();
    await db.schema.alterTable('x402_settlements').addColumn('fee_day', 'text').execute();
    await db.schema
      .createTable('x402_sponsored_fees')
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('network', 'text', (c) => c.notNull())
      .addColumn('day', 'text', (c) => c.notNull())
      .addColumn('amount', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('x402_sponsored_fees_pk', ['account_id', 'network', 'day'])
      .execute();
  },
};
