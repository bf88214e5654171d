import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadMasterKey } from '../../../src/services/custody/master-key.ts';
import { openStore, storageLocation } from '../../../src/store/open-store.ts';
import { makeDataDirPrivate } from '../../../src/store/private-data-dir.ts';
import { aTestAccount } from '../../support/test-account.ts';

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('DATA_DIR is private to the gateway user', () => {
  let root: string;
  let umask: number;
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'gate402-data-'));
    umask = process.umask();
  });
  after(() => {
    process.umask(umask);
    rmSync(root, { recursive: true, force: true });
  });

  it('tightens what an older gateway left readable (0644 files in 0755 folders), and says which', () => {
    const dataDir = join(root, 'old');
    mkdirSync(join(dataDir, 'localnet'), { recursive: true, mode: 0o755 });
    chmodSync(dataDir, 0o755);
    chmodSync(join(dataDir, 'localnet'), 0o755);
    writeFileSync(join(dataDir, 'gate402.sqlite'), 'x', { mode: 0o644 });
    writeFileSync(join(dataDir, 'localnet', 'ledger.json'), 'x', { mode: 0o644 });
    writeFileSync(join(dataDir, 'already.key'), 'x', { mode: 0o600 });
    chmodSync(join(dataDir, 'gate402.sqlite'), 0o644);
    chmodSync(join(dataDir, 'localnet', 'ledger.json'), 0o644);
    const { tightened, failed } = makeDataDirPrivate(dataDir);
    assert.deepEqual(failed, []);
    assert.deepEqual(tightened.map((p) => p.slice(dataDir.length)).sort(), [
      '',
      '/gate402.sqlite',
      '/localnet',
      '/localnet/ledger.json',
    ]);
    assert.equal(modeOf(dataDir), 0o700);
    assert.equal(modeOf(join(dataDir, 'localnet')), 0o700);
    assert.equal(modeOf(join(dataDir, 'gate402.sqlite')), 0o600);
    assert.equal(modeOf(join(dataDir, 'localnet', 'ledger.json')), 0o600);
    assert.equal(modeOf(join(dataDir, 'already.key')), 0o600);
  });

  it('creates the SQLite file with its -wal and -shm, the master key and new folders 0600 / 0700', async () => {
    process.umask(0o022); // a usual default: without the gateway's own umask, files would be 0644
    const dataDir = join(root, 'new', 'data');
    makeDataDirPrivate(dataDir);
    assert.equal(modeOf(dataDir), 0o700);
    loadMasterKey({ dataDir, databaseUrl: undefined, masterKey: undefined }, () => {});
    const { store } = await openStore(storageLocation({ dataDir, databaseUrl: undefined }));
    try {
      await store.accounts.insert(aTestAccount('acct_files'));
      mkdirSync(join(dataDir, 'anvil'));
      writeFileSync(join(dataDir, 'anvil', 'state.json'), '{}');
      for (const name of ['gate402.sqlite', 'gate402.sqlite-wal', 'gate402.sqlite-shm', 'master.key']) {
        assert.ok(existsSync(join(dataDir, name)), name);
        assert.equal(modeOf(join(dataDir, name)), 0o600, name);
      }
      assert.equal(modeOf(join(dataDir, 'anvil')), 0o700);
      assert.equal(modeOf(join(dataDir, 'anvil', 'state.json')), 0o600);
    } finally {
      await store.close();
    }
  });
});
