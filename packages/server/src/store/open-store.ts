import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Kysely, PostgresDialect, sql } from 'kysely';
import type pg from 'pg';
import type { Config } from '../config.ts';
import type { Database } from './database-schema.ts';
import { BEGIN_IMMEDIATE_SQL, DurableSqliteDialect } from './kysely/durable-sqlite-dialect.ts';
import { guardedPool } from './kysely/guarded-pg-pool.ts';
import { KyselyStore } from './kysely/kysely-store.ts';
import { migrateToLatest } from './migrate.ts';
import { withSqliteMigrationLock } from './sqlite-migration-lock.ts';
import { STORAGE_LIMIT_DEFAULTS } from './storage-limits.ts';
import { WalCheckpointer } from './wal-checkpointer.ts';
import { type SyncFile, WalSync } from './wal-sync.ts';

export type StorageLocation =
  | {
      readonly kind: 'sqlite';
      readonly file: string;
      /** Default STORAGE_LIMIT_DEFAULTS.sqliteBusyTimeoutMs. */
      readonly busyTimeoutMs?: number;
    }
  | {
      readonly kind: 'postgres';
      readonly url: string;
      /** A schema other than the connection's default; tests use one schema each. */
      readonly schema?: string;
      readonly poolSize?: number;
      /** Opening a connection or waiting for a free one; default STORAGE_LIMIT_DEFAULTS. */
      readonly connectTimeoutMs?: number;
      /** One statement; 0: no limit (migrations). Default STORAGE_LIMIT_DEFAULTS. */
      readonly statementTimeoutMs?: number;
    };

export interface OpenedStore {
  readonly store: KyselyStore;
  /** Migrations this start applied. */
  readonly migrated: string[];
}

/** The SQLite file name inside DATA_DIR. */
export const SQLITE_FILE_NAME = 'gate402.sqlite';

/** Where storage lives: PostgreSQL when DATABASE_URL is set, else a SQLite file in DATA_DIR. */
export function storageLocation(
  config: Pick<Config, 'databaseUrl' | 'dataDir'> &
    Partial<Pick<Config, 'databaseConnectTimeoutMs' | 'databaseStatementTimeoutMs' | 'sqliteBusyTimeoutMs'>>,
): StorageLocation {
  if (config.databaseUrl === undefined) {
    return {
      kind: 'sqlite',
      file: join(config.dataDir, SQLITE_FILE_NAME),
      ...(config.sqliteBusyTimeoutMs === undefined ? {} : { busyTimeoutMs: config.sqliteBusyTimeoutMs }),
    };
  }
  return {
    kind: 'postgres',
    url: config.databaseUrl,
    ...(config.databaseConnectTimeoutMs === undefined
      ? {}
      : { connectTimeoutMs: config.databaseConnectTimeoutMs }),
    ...(config.databaseStatementTimeoutMs === undefined
      ? {}
      : { statementTimeoutMs: config.databaseStatementTimeoutMs }),
  };
}

/** How a SQLite store opens; tests hold or count the log's flushes. */
export interface SqliteOptions {
  /** Flushes the write-ahead log's descriptor; default fdatasync on Node's thread pool. */
  readonly syncFile?: SyncFile;
  /** Log pages past which the checkpoint worker restarts the log (see WalCheckpointer). */
  readonly walRestartPages?: number;
}

/** How an opened store reports storage trouble it recovers from by itself; default a process warning. */
export type StorageProblem = (message: string, error: Error) => void;

/** Opens storage and migrates it to the newest schema. */
export async function openStore(
  location: StorageLocation,
  options: SqliteOptions & { readonly onProblem?: StorageProblem } = {},
): Promise<OpenedStore> {
  const migrated = location.kind === 'postgres' ? await migratePostgres(location) : [];
  const { db, changeToken, durable } = await connect(location, options);
  try {
    if (location.kind === 'sqlite') migrated.push(...(await migrate(db, location)));
    return {
      store: new KyselyStore(db, { groupCommit: location.kind === 'sqlite', changeToken, durable }),
      migrated,
    };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

/**
 * PostgreSQL migrates on a connection of its own without the statement limit: building an index on a
 * large table, or waiting for another instance's migration lock, may take longer than any request should.
 */
async function migratePostgres(location: StorageLocation & { kind: 'postgres' }): Promise<string[]> {
  const { db } = await connect({ ...location, poolSize: 1, statementTimeoutMs: 0 });
  try {
    return await migrate(db, location);
  } finally {
    await db.destroy();
  }
}

/** Migrates with the cross-instance lock each database needs (see migrate.ts). */
export async function migrate(db: Kysely<Database>, location: StorageLocation): Promise<string[]> {
  if (location.kind === 'postgres') return migrateToLatest(db, location.schema ?? (await currentSchema(db)));
  if (location.file === ':memory:') return migrateToLatest(db);
  return withSqliteMigrationLock(location.file, () => migrateToLatest(db));
}

/**
 * The schema the connection's search_path resolves to (DATABASE_URL may set it with `options`). Kysely's
 * migrator must look for its bookkeeping tables there: left to itself it finds them in any schema, so a
 * second gate402 schema in the same database would be taken as already migrated.
 */
async function currentSchema(db: Kysely<Database>): Promise<string> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema;
  if (schema === undefined) throw new Error('PostgreSQL reports no current schema (empty search_path)');
  return schema;
}

/** A Kysely handle on storage without a store around it (migrations and storage tests use it). */
export async function createKysely(location: StorageLocation): Promise<Kysely<Database>> {
  return (await connect(location)).db;
}

interface Connection {
  readonly db: Kysely<Database>;
  /** See Store.changeToken; PostgreSQL has none. */
  readonly changeToken?: () => string | undefined;
  /** See Store.durable; PostgreSQL answers a commit only once it is durable, so it needs none. */
  readonly durable?: () => Promise<void>;
}

/** Each driver is loaded only when its database is used: a SQLite install never loads pg, and back. */
async function connect(
  location: StorageLocation,
  options: SqliteOptions & { readonly onProblem?: StorageProblem } = {},
): Promise<Connection> {
  if (location.kind === 'sqlite') {
    const { default: SqliteDatabase } = await import('better-sqlite3');
    if (location.file !== ':memory:') mkdirSync(join(location.file, '..'), { recursive: true });
    const sqlite = new SqliteDatabase(location.file);
    sqlite.pragma('journal_mode = WAL');
    // NORMAL: COMMIT writes the log without flushing it on the event loop; the log is flushed off it
    // (WalSync) before any commit is announced, so a committed payment still survives a power loss.
    // An in-memory database has no log to flush.
    const memory = location.file === ':memory:';
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    // A unit of a group commit runs inside a savepoint, whose undo journal SQLite keeps in a temporary
    // file once it passes 64 KiB — a receive's dozen-odd b-tree pages do. Kept in memory, a savepointed
    // receive costs a third of the database time (measured: ~110 µs → ~35 µs per unit).
    sqlite.pragma('temp_store = MEMORY');
    // Other processes on the same file (an instance, the CLI) wait this long for the write lock instead
    // of failing at once; past it the write fails as storage unavailable (503, retry).
    sqlite.pragma(`busy_timeout = ${location.busyTimeoutMs ?? STORAGE_LIMIT_DEFAULTS.sqliteBusyTimeoutMs}`);
    const database = withStatementCache(sqlite);
    const wal = memory ? undefined : new WalSync(`${sqlite.name}-wal`, options.syncFile);
    const durable = wal === undefined ? () => Promise.resolve() : () => wal.durable();
    // Checkpoints run on a worker thread, not inside a COMMIT on the event loop (see WalCheckpointer).
    let checkpointer: WalCheckpointer | undefined;
    if (!memory) {
      sqlite.pragma('wal_autocheckpoint = 0');
      checkpointer = new WalCheckpointer(
        location.file,
        () => sqlite.pragma('wal_autocheckpoint = 1000'),
        (message) => process.emitWarning(message, 'Gate402StorageWarning'),
        options.walRestartPages,
      );
    }
    const dialect = new DurableSqliteDialect(
      {
        database: {
          ...database,
          close: () => {
            database.close();
            // After the connection: flushes under way finish on the descriptor first.
            void wal?.close();
          },
        },
      },
      { writes: database.writes, durable, close: async () => checkpointer?.stop() },
    );
    return { db: new Kysely<Database>({ dialect }), changeToken: database.changeToken, durable };
  }
  const { default: pg } = await import('pg');
  const statementTimeoutMs = location.statementTimeoutMs ?? STORAGE_LIMIT_DEFAULTS.statementTimeoutMs;
  const pool = new pg.Pool({
    connectionString: location.url,
    max: location.poolSize ?? 10,
    // pg-pool applies it to both: opening a connection, and waiting for a free one when all are busy.
    connectionTimeoutMillis: location.connectTimeoutMs ?? STORAGE_LIMIT_DEFAULTS.connectTimeoutMs,
    // The server cancels a statement past the limit and the connection stays usable (0: none).
    statement_timeout: statementTimeoutMs,
    // Idle connections a firewall or NAT silently dropped are found by the kernel, not by a caller.
    keepAlive: true,
    // Named in pg_stat_activity unless DATABASE_URL names it (application_name=…).
    fallback_application_name: 'gate402',
    ...(location.schema === undefined ? {} : { options: `-c search_path=${quoteIdent(location.schema)}` }),
    types: { getTypeParser: pgTypeParser(pg.types) },
  });
  const onProblem =
    options.onProblem ??
    ((message, error) => process.emitWarning(`${message}: ${error.message}`, 'Gate402StorageWarning'));
  return {
    db: new Kysely<Database>({
      dialect: new PostgresDialect({ pool: guardedPool(pool, { statementTimeoutMs }, onProblem) }),
    }),
  };
}

const STATEMENT_CACHE_SIZE = 256;

type SqliteStatement = import('better-sqlite3').Statement;

/**
 * Kysely prepares every query afresh; preparing costs more than running a small indexed query.
 * Kysely's SQL text is stable per query shape (values are bound parameters), so prepared statements
 * are reused by text. Bounded: the oldest statement is dropped past the limit.
 *
 * Also keeps the change token (Store.changeToken): every statement Kysely runs on this connection
 * passes through here, so a statement that may write counts a write — before it runs, in the same
 * synchronous step, so no reader can see its effect under the old token. Other connections' commits
 * (another instance or a CLI on the same file) show in SQLite's `data_version`, which changes for
 * those only.
 */
function withStatementCache(sqlite: import('better-sqlite3').Database) {
  const cache = new Map<string, ReturnType<typeof fastRowStatement>>();
  let writes = 0;
  const countWrite = () => {
    writes++;
  };
  const dataVersion = sqlite.prepare('pragma data_version').pluck();
  return {
    close: () => sqlite.close(),
    /** Statements that may write run so far (see DurableSqliteDialect). */
    writes: () => writes,
    prepare: (text: string) => {
      let statement = cache.get(text);
      if (statement === undefined) {
        const prepared = sqlite.prepare(text);
        // BEGIN IMMEDIATE takes the write lock but writes nothing (SQLite calls it not read-only).
        const writes = !prepared.readonly && text !== BEGIN_IMMEDIATE_SQL;
        statement = fastRowStatement(prepared, writes ? countWrite : undefined);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value ?? '');
        cache.set(text, statement);
      }
      return statement;
    },
    changeToken: (): string | undefined => {
      try {
        return `${dataVersion.get() as number}:${writes}`;
      } catch {
        // The connection is in the middle of iterating a query's rows: no token, so nothing is trusted.
        return undefined;
      }
    },
  };
}

/**
 * The part of a statement Kysely's SQLite driver uses, with rows read as arrays and turned into objects
 * by a function made for the statement's columns. better-sqlite3 builds each row object property by
 * property, which for a payment row (32 columns) costs twice the whole query; an object literal of a
 * fixed shape costs a fraction. Same result: same keys in the same order, a later duplicate name wins.
 * `beforeWrite` is called before each run of a statement that may write (an UPDATE … RETURNING reads
 * rows too).
 */
function fastRowStatement(statement: SqliteStatement, beforeWrite?: () => void) {
  if (!statement.reader) {
    if (beforeWrite === undefined) return statement;
    return {
      reader: false,
      all: (parameters: unknown[]) => {
        beforeWrite();
        return statement.all(parameters);
      },
      run: (parameters: unknown[]) => {
        beforeWrite();
        return statement.run(parameters);
      },
      iterate: (parameters: unknown[]) => {
        beforeWrite();
        return statement.iterate(parameters);
      },
    };
  }
  const raw = statement.raw(true);
  const columns = raw.columns().map((column) => column.name);
  const toRow = new Function(
    'values',
    `return {${columns.map((name, i) => `${JSON.stringify(name)}: values[${i}]`).join(', ')}};`,
  ) as (values: unknown[]) => Record<string, unknown>;
  return {
    reader: true,
    all: (parameters: unknown[]) => {
      beforeWrite?.();
      return (raw.all(parameters) as unknown[][]).map(toRow);
    },
    run: (parameters: unknown[]) => {
      beforeWrite?.();
      return raw.run(parameters);
    },
    *iterate(parameters: unknown[]) {
      beforeWrite?.();
      for (const values of raw.iterate(parameters) as IterableIterator<unknown[]>) yield toRow(values);
    },
  };
}

const PG_INT8_OID = 20;

/** int8 columns hold Unix milliseconds, well inside the safe-integer range: read them as numbers. */
function pgTypeParser(types: typeof pg.types) {
  return (oid: number, format?: 'text' | 'binary') => {
    if (oid === PG_INT8_OID) return (value: string) => Number(value);
    // biome-ignore lint/suspicious/noExplicitAny: pg's overloads do not accept the union format type
    return types.getTypeParser(oid, format as any);
  };
}

function quoteIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`invalid schema name: ${name}`);
  return name;
}
