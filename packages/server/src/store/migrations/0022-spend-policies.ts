import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Spend policies (#28, services/spending/):
 * - `api_keys.scopes`: space-separated scopes of a key; `admin` lets it read and set spend policies.
 *   Keys made before this migration have none.
 * - `spend_policies`: one row per account (`key_id` '' — a primary key column cannot be null on
 *   PostgreSQL) and per API key that has its own; the rules are JSON text, amounts in it atomic-unit
 *   decimal text.
 * - `spend_records`: every custodial spend (send, x402 pay, local build) with the key that made it, so
 *   a rolling 24 h sum per account or key and asset can be taken. A spend whose payment ends failed,
 *   expired or reverted stops counting by the join with `payments` (nothing to release by hand).
 *   Rows older than a day are removed as new spends of the same asset are recorded.
 * - `spend_locks`: one row per account and asset, updated first in the transaction that checks and
 *   records a spend under a daily cap; the row lock (PostgreSQL) serialises those transactions across
 *   gateway instances, so two spends never both see room that only one fits in. SQLite has one writer.
 */
export const spendPolicies: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('api_keys')
      .addColumn('scopes', 'text', (c) => c.notNull().defaultTo(''))
      .execute();
    await db.schema
      .createTable('spend_policies')
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('key_id', 'text', (c) => c.notNull())
      .addColumn('rules', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('spend_policies_pk', ['account_id', 'key_id'])
      .execute();
    await db.schema
      .createTable('spend_records')
      .addColumn('payment_id', 'text', (c) => c.notNull())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('key_id', 'text')
      .addColumn('network', 'text', (c) => c.notNull())
      .addColumn('asset', 'text', (c) => c.notNull())
      .addColumn('amount', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      // A token payment also spends the native currency (its fee and any deposit): one row per asset.
      .addPrimaryKeyConstraint('spend_records_pk', ['payment_id', 'asset'])
      .execute();
    await sql`create index spend_records_window on spend_records (account_id, network, asset, created_at)`.execute(
      db,
    );
    await db.schema
      .createTable('spend_locks')
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('network', 'text', (c) => c.notNull())
      .addColumn('asset', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('spend_locks_pk', ['account_id', 'network', 'asset'])
      .execute();
  },
};
