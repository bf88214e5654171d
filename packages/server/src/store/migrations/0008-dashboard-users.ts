import type { Kysely, Migration } from 'kysely';

/**
 * People who log in to the web dashboard, and their sessions.
 *
 * A dashboard user belongs to exactly one account (unique account_id): the account is what owns keys,
 * wallets and payments; the user is only a way in. Emails are stored lower-cased and unique. Session
 * ids are stored as SHA-256 hashes, so a read of this table gives no usable cookie.
 */
export const dashboardUsers: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('dashboard_users')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().unique().references('accounts.id'))
      .addColumn('email', 'text', (c) => c.notNull().unique())
      // scrypt$N$r$p$salt$hash (see password-hash.ts)
      .addColumn('password_hash', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('dashboard_sessions')
      .addColumn('id_hash', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('dashboard_users.id'))
      .addColumn('csrf_token', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('dashboard_sessions_user')
      .on('dashboard_sessions')
      .column('user_id')
      .execute();

    // The dashboard lists an account's payments across its wallets, newest first.
    await db.schema
      .createIndex('payments_account_created')
      .on('payments')
      .columns(['account_id', 'created_at', 'id'])
      .execute();
  },
};
