import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryCompiler,
  SqliteDialect,
  type SqliteDialectConfig,
} from 'kysely';

/** Writes nothing itself: the connection's write count (CommitDurability.writes) leaves it out. */
export const BEGIN_IMMEDIATE_SQL = 'begin immediate';
const BEGIN_IMMEDIATE = CompiledQuery.raw(BEGIN_IMMEDIATE_SQL);

/** What the dialect needs to know of the connection's writes and of the log's flushing. */
export interface CommitDurability {
  /** How many statements that may write have run on the connection so far. */
  writes(): number;
  /** Resolves once every commit made before the call is on disk (see WalSync). */
  durable(): Promise<void>;
  /** Called before the connection closes (stops the checkpoint worker). */
  close?(): Promise<void>;
}

/**
 * SQLite's dialect, except that a use of the connection that wrote something — a transaction that
 * committed, or a statement run outside one, which commits by itself — is not over until that commit is
 * on disk. The wait begins after the connection is handed back, so other queries run while the log is
 * flushed; only the caller of the write waits. Every path that commits (Store.transaction, group commit,
 * a repository's single statement) goes through a connection's release, so none can tell its caller of
 * a commit that a power loss would take back.
 */
export class DurableSqliteDialect extends SqliteDialect {
  constructor(
    config: SqliteDialectConfig,
    private readonly durability: CommitDurability,
  ) {
    super(config);
  }

  override createDriver(): Driver {
    return new DurableDriver(super.createDriver(), this.durability);
  }
}

class DurableDriver implements Driver {
  /** Writes counted when the connection was acquired; SQLite's driver hands out its one connection at a time. */
  private writesAtAcquire = 0;

  constructor(
    private readonly driver: Driver,
    private readonly durability: CommitDurability,
  ) {}

  init(): Promise<void> {
    return this.driver.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.driver.acquireConnection();
    this.writesAtAcquire = this.durability.writes();
    return connection;
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    // Read before the release: once released, the next holder's writes count too.
    const wrote = this.durability.writes() !== this.writesAtAcquire;
    // The next holder is let in first: its statements run while this commit's log is flushed.
    await this.driver.releaseConnection(connection);
    if (wrote) await this.durability.durable();
  }

  /**
   * BEGIN IMMEDIATE, not Kysely's deferred BEGIN: the write lock is taken at the start, where SQLite
   * waits busy_timeout for it. A deferred transaction that read first and then writes meets a lock held
   * elsewhere (another process, the checkpoint worker's RESTART) with SQLITE_BUSY at once, busy_timeout
   * or not. On this one connection, which transactions take one at a time, it costs nothing more.
   */
  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(BEGIN_IMMEDIATE);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.driver.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.driver.rollbackTransaction(connection);
  }

  async savepoint(
    connection: DatabaseConnection,
    name: string,
    compileQuery: QueryCompiler['compileQuery'],
  ): Promise<void> {
    await this.driver.savepoint?.(connection, name, compileQuery);
  }

  async rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compileQuery: QueryCompiler['compileQuery'],
  ): Promise<void> {
    await this.driver.rollbackToSavepoint?.(connection, name, compileQuery);
  }

  async releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compileQuery: QueryCompiler['compileQuery'],
  ): Promise<void> {
    await this.driver.releaseSavepoint?.(connection, name, compileQuery);
  }

  async destroy(): Promise<void> {
    await this.durability.close?.();
    await this.driver.destroy();
  }
}
