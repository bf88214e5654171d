/**
 * Storage could not be reached or did not answer in time: a connection refused, reset or terminated
 * (a PostgreSQL restart or failover, a pooler restart, a firewall dropping idle connections), a
 * connection or statement time limit passed, or SQLite's write lock held past its busy timeout.
 * Nothing the failed call did was kept — a transaction it was in is rolled back — so the work may be
 * tried again; HTTP answers it `503 SERVICE_UNAVAILABLE` with `retryAfter` (http/plugins/errors.ts).
 */
export class StorageUnavailableError extends Error {
  override readonly name = 'StorageUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** What a caller is told to wait when storage failed: pools reconnect on the next use. */
export const STORAGE_RETRY_AFTER_SECONDS = 1;

/**
 * Whether `error`, or an error in its `cause` chain, says storage is unavailable (see
 * StorageUnavailableError). PostgreSQL's driver errors are translated where queries run
 * (store/kysely/guarded-pg-pool.ts); SQLite's busy error is recognised here, as it is thrown by the
 * driver's synchronous calls directly.
 */
export function isStorageUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    if (e instanceof StorageUnavailableError) return true;
    const code = (e as { code?: unknown }).code;
    // SQLITE_BUSY, SQLITE_BUSY_SNAPSHOT, …: another process held the file's lock past busy_timeout.
    if (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
