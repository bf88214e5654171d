import { type Kysely, type Migration, sql } from 'kysely';

/**
 * A webhook endpoint can be disabled: by its receiver answering 410 Gone (the REST-hooks convention for
 * "unsubscribe me"), or by its account. `disabled_at` and `disabled_reason` say when and why (both null
 * while it is enabled); `enabled_at` is when it was last enabled (registered, or enabled again), and only
 * events written from then on are delivered to it, so nothing that happened while it was disabled is
 * sent once it is enabled again. Existing endpoints were enabled when they were registered.
 */
export const webhookDisabled: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('webhooks').addColumn('disabled_at', 'bigint').execute();
    await db.schema.alterTable('webhooks').addColumn('disabled_reason', 'text').execute();
    // Nullable only because SQLite cannot add a NOT NULL column without a constant default; every row
    // gets a value here and every insert writes one.
    await db.schema.alterTable('webhooks').addColumn('enabled_at', 'bigint').execute();
    await sql`update webhooks set enabled_at = created_at`.execute(db);
  },
};
