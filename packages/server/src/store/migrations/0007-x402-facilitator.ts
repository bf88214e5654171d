import type { Kysely, Migration } from 'kysely';

/**
 * The built-in x402 facilitator: its fee-payer keys (sealed like custodial wallet keys), one row per
 * settlement keyed by the payload's identity (the Solana transaction, the EVM authorization), and the
 * asset of a payment that is not in the network's native currency (x402 `exact` pays in tokens).
 */
export const x402Facilitator: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('facilitator_signers')
      .addColumn('address', 'text', (c) => c.primaryKey())
      .addColumn('family', 'text', (c) => c.notNull())
      .addColumn('encrypted_secret', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    // The primary key is what makes settlement exactly once: the row is claimed, with the signed
    // transaction in it, before anything is broadcast, on whichever instance gets there first.
    await db.schema
      .createTable('x402_settlements')
      .addColumn('settlement_key', 'text', (c) => c.primaryKey())
      .addColumn('network', 'text', (c) => c.notNull())
      .addColumn('payer', 'text', (c) => c.notNull())
      .addColumn('pay_to', 'text', (c) => c.notNull())
      .addColumn('asset', 'text', (c) => c.notNull())
      .addColumn('amount', 'text', (c) => c.notNull())
      .addColumn('transaction_id', 'text', (c) => c.notNull())
      .addColumn('signed_transaction', 'text', (c) => c.notNull())
      .addColumn('last_valid_block_height', 'bigint')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('payment_id', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    // Null: the network's native currency (every payment before x402 tokens).
    await db.schema.alterTable('payments').addColumn('asset', 'text').execute();
    await db.schema.alterTable('payments').addColumn('asset_decimals', 'integer').execute();
  },
};
