import SqliteDatabase from 'better-sqlite3';

const RETRY_MS = 25;
const GIVE_UP_MS = 60_000;

/**
 * Runs `work` while holding a lock that every process migrating the same SQLite file respects.
 *
 * Kysely takes no lock across processes on SQLite, and two migrators racing on one file fail
 * half-way. The lock is an exclusive transaction on a small side file (`<file>-migrate.lock`): SQLite's
 * own file locking makes it work across processes, and it is released if the holder dies. It is taken
 * with busy_timeout 0 and retried asynchronously, so waiters in the same process do not block the holder.
 */
export async function withSqliteMigrationLock<T>(file: string, work: () => Promise<T>): Promise<T> {
  const lock = new SqliteDatabase(`${file}-migrate.lock`);
  try {
    lock.pragma('busy_timeout = 0');
    const started = Date.now();
    for (;;) {
      try {
        lock.exec('BEGIN EXCLUSIVE');
        break;
      } catch (error) {
        if (!isBusy(error) || Date.now() - started > GIVE_UP_MS) throw error;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
    try {
      return await work();
    } finally {
      lock.exec('COMMIT');
    }
  } finally {
    lock.close();
  }
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
