/**
 * Time limits on storage, so a database that is down or stalled answers callers `503` promptly instead
 * of holding them (see README, "When storage or Redis fails"). The defaults of the settings in config.ts;
 * tests and tools that open storage without a configuration get the same.
 */
export const STORAGE_LIMIT_DEFAULTS = {
  /** PostgreSQL: opening a connection, or waiting for a free one in the pool. */
  connectTimeoutMs: 3_000,
  /**
   * PostgreSQL: one statement. The server cancels it then (statement_timeout); a connection that has not
   * answered a little later is given up for dead and replaced.
   */
  statementTimeoutMs: 5_000,
  /** SQLite: how long a write waits for another process's write lock on the same file. */
  sqliteBusyTimeoutMs: 5_000,
} as const;
