import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createLogger, startServer } from '../../src/server.ts';
import { tempDir } from '../support/databases.ts';

describe('gate402 serve: the master key', () => {
  it('is read once, first: an unreadable key stops the start before storage or any chain is touched', async () => {
    const dir = tempDir();
    try {
      writeFileSync(join(dir.path, 'master.key'), 'not a key\n', { mode: 0o600 });
      // Free ports, in case a chain did start: it must not take the ones a developer's gateway uses.
      const config = loadConfig({ DATA_DIR: dir.path, PORT: '0', LOCALNET_PORT: '0', ANVIL_PORT: '0' });
      await assert.rejects(
        startServer(config, createLogger({ logLevel: 'silent' })),
        /master\.key does not hold a 32-byte key/,
      );
      assert.equal(existsSync(join(dir.path, 'gate402.sqlite')), false, 'storage was not opened');
      assert.deepEqual(readdirSync(dir.path), ['master.key'], 'no chain state either');
    } finally {
      dir.dispose();
    }
  });
});
