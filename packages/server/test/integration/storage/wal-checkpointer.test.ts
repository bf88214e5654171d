import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { createKysely, openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { WalCheckpointer } from '../../../src/store/wal-checkpointer.ts';
import { tempDir } from '../../support/databases.ts';
import { aTestAccount } from '../../support/test-account.ts';

describe('SQLite: the write-ahead log is checkpointed on a worker thread', () => {
  it('turns the connection’s automatic checkpoint off, and the worker copies the log into the database', async () => {
    const dir = tempDir();
    const file = join(dir.path, 'gate402.sqlite');
    const { store } = await openStore({ kind: 'sqlite', file });
    const db = await createKysely({ kind: 'sqlite', file });
    try {
      const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db);
      assert.equal(rows[0]?.wal_autocheckpoint, 0, 'no checkpoint inside a COMMIT on the event loop');
      const before = statSync(file).size;
      // Far past SQLite's own 1,000-page threshold: only a checkpoint writes the database file itself.
      for (let i = 0; i < 200; i++) await insertAccounts(store, `acct_${i}`, 20, 500);
      let size = statSync(file).size;
      for (let waited = 0; size <= before + 1_000_000 && waited < 10_000; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        size = statSync(file).size;
      }
      assert.ok(size > before + 1_000_000, `the database file grew from ${before} to ${size} bytes`);
      assert.equal((await store.accounts.get('acct_199_19'))?.name.length, 500);
    } finally {
      await db.destroy();
      await store.close();
      dir.dispose();
    }
  });

  it('keeps the log bounded under writes that never pause, by restarting it past its limit', async () => {
    const dir = tempDir();
    const file = join(dir.path, 'gate402.sqlite');
    // 256 pages (1 MiB) instead of 64 MiB, so a few seconds of writes cross it many times.
    const { store } = await openStore({ kind: 'sqlite', file }, { walRestartPages: 256 });
    try {
      let largestLog = 0;
      let written = 0;
      const until = Date.now() + 3_000;
      // Back to back, as under sustained load: the log is never entirely copied when a commit begins.
      for (let i = 0; Date.now() < until; i++) {
        await insertAccounts(store, `acct_${i}`, 10, 1_000);
        written += 10 * 1_000;
        largestLog = Math.max(largestLog, statSync(`${file}-wal`).size);
      }
      // Without the restart the log held every page written: ~97 MB here for 27 MB of rows.
      assert.ok(written > 12_000_000, `wrote ${written} bytes of rows`);
      assert.ok(largestLog < 20_000_000, `the log reached ${largestLog} bytes for ${written} bytes written`);
    } finally {
      await store.close();
      dir.dispose();
    }
  });

  it('turns SQLite’s automatic checkpoint back on when the worker fails', async () => {
    const dir = tempDir();
    const warnings: string[] = [];
    let fellBack = false;
    // A directory is no database: the worker's connection fails as it opens.
    const checkpointer = new WalCheckpointer(
      dir.path,
      () => {
        fellBack = true;
      },
      (message) => warnings.push(message),
    );
    try {
      for (let waited = 0; !fellBack && waited < 10_000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(fellBack, true);
      assert.match(warnings.join('\n'), /automatic checkpoint is back on/);
    } finally {
      await checkpointer.stop();
      dir.dispose();
    }
  });
});

/** One transaction inserting `count` accounts whose names are `nameLength` characters. */
function insertAccounts(store: Store, idPrefix: string, count: number, nameLength: number): Promise<void> {
  return store.transaction(async (tx) => {
    for (let j = 0; j < count; j++) {
      await tx.accounts.insert(aTestAccount(`${idPrefix}_${j}`, { name: 'x'.repeat(nameLength) }));
    }
  });
}
