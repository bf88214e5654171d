import { type Kysely, type Migration, PostgresAdapter, sql } from 'kysely';

/**
 * Custodial and watch-only wallets, payments, consumed payment proofs, idempotency keys and the
 * event outbox. Atomic amounts are decimal text: wei does not fit a 64-bit integer.
 */
export const walletsPaymentsEvents: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('wallets')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('family', 'text', (c) => c.notNull())
      // A key pair serves every network of its family; this is the one it was created for, if any.
      .addColumn('network', 'text')
      .addColumn('address', 'text', (c) => c.notNull())
      .addColumn('watch_only', 'integer', (c) => c.notNull())
      // AES-256-GCM under the master key; null for watch-only wallets.
      .addColumn('encrypted_secret', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    // One owner per address: nobody can claim payments to someone else's wallet.
    await db.schema
      .createIndex('wallets_family_address')
      .on('wallets')
      .columns(['family', 'address'])
      .unique()
      .execute();
    await db.schema.createIndex('wallets_account').on('wallets').columns(['account_id', 'id']).execute();

    await db.schema
      .createTable('payments')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('direction', 'text', (c) => c.notNull().check(sql`direction in ('sent', 'received')`))
      .addColumn('mode', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('network', 'text', (c) => c.notNull())
      // The account's own wallet in this payment: the sender of a sent one, the recipient of a received one.
      .addColumn('wallet_address', 'text', (c) => c.notNull())
      .addColumn('sender', 'text', (c) => c.notNull())
      .addColumn('recipient', 'text', (c) => c.notNull())
      .addColumn('amount', 'text', (c) => c.notNull())
      .addColumn('fee', 'text')
      .addColumn('resource', 'text')
      .addColumn('metadata', 'text')
      .addColumn('signature', 'text')
      .addColumn('reference', 'text')
      // The signed transaction, stored before broadcast so a restart resends the same bytes.
      .addColumn('signed_transaction', 'text')
      .addColumn('last_valid_block_height', 'bigint')
      .addColumn('expires_at', 'bigint')
      .addColumn('slot', 'bigint')
      .addColumn('block_height', 'bigint')
      .addColumn('error', 'text')
      .addColumn('source_payment_id', 'text')
      .addColumn('idempotency_key', 'text')
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('confirmed_at', 'bigint')
      .execute();
    await db.schema
      .createIndex('payments_history')
      .on('payments')
      .columns(['account_id', 'wallet_address', 'created_at', 'id'])
      .execute();
    await db.schema.createIndex('payments_open').on('payments').columns(['status', 'lease_until']).execute();
    await db.schema.createIndex('payments_reference').on('payments').column('reference').execute();
    await db.schema
      .createIndex('payments_idempotency')
      .on('payments')
      .columns(['account_id', 'idempotency_key'])
      .unique()
      .execute();

    // A payment proof is accepted once, ever: the key is the on-chain transaction it points at.
    await db.schema
      .createTable('consumed_proofs')
      .addColumn('proof_key', 'text', (c) => c.primaryKey())
      .addColumn('payment_id', 'text', (c) => c.notNull())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('consumed_at', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('idempotency_keys')
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('locked_until', 'bigint')
      .addColumn('response_status', 'integer')
      .addColumn('response_body', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'key'])
      .execute();
    await db.schema
      .createIndex('idempotency_keys_created')
      .on('idempotency_keys')
      .column('created_at')
      .execute();

    // The outbox: one row per state change, written in the same transaction as the change.
    const events = db.schema.createTable('events');
    await (isPostgres(db)
      ? events.addColumn('seq', 'bigserial', (c) => c.primaryKey())
      : events.addColumn('seq', 'integer', (c) => c.primaryKey().autoIncrement())
    )
      .addColumn('id', 'text', (c) => c.notNull().unique())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('payment_id', 'text')
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('events_account_seq').on('events').columns(['account_id', 'seq']).execute();
  },
};

function isPostgres(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
