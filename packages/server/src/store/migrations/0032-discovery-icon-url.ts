import type { Kysely, Migration } from 'kysely';

/**
 * The bazaar catalogue keeps the seller's `resource.iconUrl` (#29, services/facilitator/icon-url.ts says
 * which are kept): null for rows written before, and for declarations without a safe one.
 */
export const discoveryIconUrl: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('discovery_resources').addColumn('icon_url', 'text').execute();
  },
};
