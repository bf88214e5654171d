import type { Kysely, Migration } from 'kysely';

/**
 * Wallet labels (#30): `wallets.label`, a name the account gives a wallet (at most 64 characters,
 * trimmed, no control characters; see domain/wallet-label.ts), shown beside its address. Null: none.
 * The only column of a wallet that changes after it is registered (PATCH /wallets/{address}).
 */
export const walletLabels: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('wallets').addColumn('label', 'text').execute();
  },
};
