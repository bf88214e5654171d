import { type Kysely, type MigrationResult, Migrator } from 'kysely';
import { MIGRATIONS } from './migrations/index.ts';

const SQLITE_BUSY_RETRIES = 20;

/**
 * Brings the schema to the newest migration; safe when several instances start at once.
 *
 * PostgreSQL: Kysely holds a transaction-scoped advisory lock while it migrates, so a second instance
 * waits and then finds nothing to do. SQLite: Kysely takes no lock across processes; a second writer
 * fails with SQLITE_BUSY (its snapshot went stale), so it retries and then finds nothing to do.
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
  for (let attempt = 0; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    if (error === undefined) return applied(results);
    if (!isSqliteBusy(error) || attempt >= SQLITE_BUSY_RETRIES) {
      throw new Error('database migration failed', { cause: error });
    }
    await new Promise((resolve) => setTimeout(resolve, 25 + Math.random() * 50));
  }
}

function applied(results: MigrationResult[] | undefined): string[] {
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

function isSqliteBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
