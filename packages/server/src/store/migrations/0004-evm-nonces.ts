import type { Kysely, Migration } from 'kysely';

/**
 * EVM nonces allocated in the database (DESIGN.md: one nonce sequence per wallet, never two writers on
 * one wallet): the next nonce of each sender on each network, and on each payment the nonce it holds
 * and the hashes of the transactions it replaced (same nonce, higher fees), so a mined old one is
 * still recognised as this payment.
 */
export const evmNonces: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('wallet_nonces')
      .addColumn('network', 'text', (c) => c.notNull())
      .addColumn('address', 'text', (c) => c.notNull())
      .addColumn('next_nonce', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('wallet_nonces_pk', ['network', 'address'])
      .execute();
    await db.schema.alterTable('payments').addColumn('nonce', 'bigint').execute();
    // JSON array of transaction hashes, oldest first; null when never replaced.
    await db.schema.alterTable('payments').addColumn('replaced_signatures', 'text').execute();
    // A send checks what the wallet's unsettled payments may still spend (unsettledSpend).
    await db.schema
      .createIndex('payments_wallet_status')
      .on('payments')
      .columns(['wallet_address', 'status'])
      .execute();
  },
};
