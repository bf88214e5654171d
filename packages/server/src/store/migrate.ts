import { type Kysely, Migrator } from 'kysely';
import { MIGRATIONS } from './migrations/index.ts';

/**
 * Brings the schema to the newest migration.
 *
 * On PostgreSQL, Kysely holds a transaction-scoped advisory lock while it migrates, so when several
 * instances start at once one migrates and the others wait, then find nothing to do. On SQLite the
 * caller holds `withSqliteMigrationLock` around this call for the same effect.
 *
 * `schema` is the PostgreSQL schema the connection's search_path points at, when not the default.
 * @returns the names of the migrations this call applied (empty when the schema was already current).
 */
export async function migrateToLatest<DB>(db: Kysely<DB>, schema?: string): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS },
    // With a schema of its own, Kysely must look for its bookkeeping tables there, not in any schema.
    ...(schema === undefined ? {} : { migrationTableSchema: schema }),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) throw new Error('database migration failed', { cause: error });
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
