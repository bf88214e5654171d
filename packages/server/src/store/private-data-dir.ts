import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Group and others: no bit of a file or folder in DATA_DIR may grant them anything. */
const OTHERS = 0o077;

/**
 * Makes DATA_DIR private to the gateway's user. It holds emails, password hashes, session CSRF tokens,
 * payment metadata, the master key and the embedded chains' state (the SQLite file with -wal and -shm,
 * master.key, the localnet ledger, anvil's state), which were created 0644 in 0755 folders.
 *
 * 1. The process umask becomes 077, so everything written from now on — by this process (SQLite, the
 *    localnet) and by the processes it starts (anvil inherits the umask) — is created 0600, folders 0700.
 * 2. DATA_DIR is created 0700, and what already exists in it is tightened (group and other bits removed,
 *    so 0644 → 0600, 0755 → 0700); symbolic links are left as they are.
 *
 * Returns the paths tightened, for the log line that says so; a path that cannot be changed (another
 * user's file) is returned in `failed` instead.
 */
export function makeDataDirPrivate(dataDir: string): { tightened: string[]; failed: string[] } {
  process.umask(OTHERS);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const tightened: string[] = [];
  const failed: string[] = [];
  const visit = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return;
    if ((stat.mode & OTHERS) !== 0) {
      try {
        chmodSync(path, stat.mode & 0o7700);
        tightened.push(path);
      } catch {
        failed.push(path);
      }
    }
    if (stat.isDirectory()) for (const name of readdirSync(path)) visit(join(path, name));
  };
  visit(dataDir);
  return { tightened, failed };
}
