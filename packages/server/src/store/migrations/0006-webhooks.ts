import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Webhook endpoints, their deliveries, and the outbox cursors that turn events into deliveries.
 *
 * A delivery is one event for one endpoint: unique on (webhook_id, event_id), so the fan-out from the
 * outbox creates it once however many instances run it. Deliveries are leased (lease_owner,
 * lease_until) so one instance at a time attempts each; `next_attempt_at` carries the back-off.
 */
export const webhooks: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('webhooks')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('url', 'text', (c) => c.notNull())
      // JSON array of event types; empty: every type.
      .addColumn('event_types', 'text', (c) => c.notNull())
      // The signing secret (whsec_…), sealed under the master key like custodial keys.
      .addColumn('secret', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('webhooks_account').on('webhooks').columns(['account_id', 'id']).execute();

    await db.schema
      .createTable('webhook_deliveries')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('webhook_id', 'text', (c) => c.notNull())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('event_seq', 'bigint', (c) => c.notNull())
      .addColumn('status', 'text', (c) =>
        c.notNull().check(sql`status in ('pending', 'succeeded', 'failed')`),
      )
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('next_attempt_at', 'bigint')
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until', 'bigint')
      .addColumn('last_status_code', 'integer')
      .addColumn('last_error', 'text')
      .addColumn('last_attempt_at', 'bigint')
      .addColumn('delivered_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_once')
      .on('webhook_deliveries')
      .columns(['webhook_id', 'event_id'])
      .unique()
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_due')
      .on('webhook_deliveries')
      .columns(['status', 'next_attempt_at'])
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_log')
      .on('webhook_deliveries')
      .columns(['webhook_id', 'event_seq'])
      .execute();

    // How far each outbox consumer has read, by commit-ordered seq (see EventRepository.append).
    await db.schema
      .createTable('outbox_cursors')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('seq', 'bigint', (c) => c.notNull())
      .execute();
    // Webhooks start with the events after this migration: there are no endpoints before it.
    await sql`insert into outbox_cursors (name, seq) select 'webhooks', coalesce(max(seq), 0) from events`.execute(
      db,
    );
  },
};
