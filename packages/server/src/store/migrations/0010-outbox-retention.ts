import type { Kysely, Migration } from 'kysely';

/**
 * The retention job (workers/retention-job.ts): a lease per background job, so one instance runs it
 * per interval, and the indexes its deletes need — old events and deliveries by creation time, and
 * "does a delivery still need this event" by event seq — so it never scans the whole outbox.
 */
export const outboxRetention: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('job_leases')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('owner', 'text', (c) => c.notNull())
      .addColumn('until', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('events_created').on('events').column('created_at').execute();
    await db.schema
      .createIndex('webhook_deliveries_event')
      .on('webhook_deliveries')
      .column('event_seq')
      .execute();
    await db.schema
      .createIndex('webhook_deliveries_created')
      .on('webhook_deliveries')
      .column('created_at')
      .execute();
  },
};
