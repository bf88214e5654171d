import type { Kysely, Migration } from 'kysely';

/**
 * Challenges that prove control of an address before it is registered as a watch-only wallet
 * (POST /wallets/challenge, then POST /wallets with the signature). A challenge is issued to one
 * account for one address, answered once (`used_at` is set by compare-and-set in the transaction that
 * inserts the wallet) and expires 10 minutes after it is issued. The nonce is the key: it is in the
 * signed text, so the text finds its row. Issuing a challenge removes those expired a day before.
 */
export const walletChallenges: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('wallet_challenges')
      .addColumn('nonce', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('family', 'text', (c) => c.notNull())
      .addColumn('address', 'text', (c) => c.notNull())
      .addColumn('message', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('used_at', 'bigint')
      .execute();
    await db.schema
      .createIndex('wallet_challenges_expires')
      .on('wallet_challenges')
      .column('expires_at')
      .execute();
  },
};
