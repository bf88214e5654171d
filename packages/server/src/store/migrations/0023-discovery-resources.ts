import { type Kysely, type Migration, sql } from 'kysely';

/**
 * The x402 `bazaar` discovery catalogue (#29, services/facilitator/discovery-catalogue.ts): what sellers
 * that settle through the built-in facilitator declared about their paid resources.
 * - One row per account and resource: `resource` is the resource's URL (its route template in place of
 *   its path when the seller gave a valid one), `tool` the MCP tool name ('' for HTTP: a primary key
 *   column cannot be null on PostgreSQL). A later settlement of the same resource replaces the row.
 * - `accepts` and `extensions` are JSON text, bounded by the service before they are written; `network`,
 *   `scheme` and `pay_to` repeat the accepted requirements' fields for the listing's filters.
 * - `search_text`: lower-case text the search endpoint matches (URL, description, service name, tags,
 *   tool), written once here rather than lower-cased on every search.
 * - The listing reads newest first, per account or over all accounts (the public view).
 */
export const discoveryResources: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('discovery_resources')
      .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
      .addColumn('resource', 'text', (c) => c.notNull())
      .addColumn('tool', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('x402_version', 'integer', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('mime_type', 'text')
      .addColumn('service_name', 'text')
      .addColumn('tags', 'text')
      .addColumn('network', 'text', (c) => c.notNull())
      .addColumn('scheme', 'text', (c) => c.notNull())
      .addColumn('pay_to', 'text', (c) => c.notNull())
      .addColumn('accepts', 'text', (c) => c.notNull())
      .addColumn('extensions', 'text', (c) => c.notNull())
      .addColumn('search_text', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('discovery_resources_pk', ['account_id', 'resource', 'tool'])
      .execute();
    await sql`create index discovery_resources_account on discovery_resources (account_id, updated_at)`.execute(
      db,
    );
    await sql`create index discovery_resources_recent on discovery_resources (updated_at)`.execute(db);
  },
};
