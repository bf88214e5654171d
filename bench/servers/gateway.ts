// gate402 as `npm start` runs it (SQLite file, in-process rate limiter), with an Enterprise key whose
// limit the benchmark cannot reach, so every request is authenticated, counted and answered in full.
// Prints its port and the key, then serves until killed.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../packages/server/src/config.ts';
import { startServer } from '../../packages/server/src/server.ts';
import { AccountService } from '../../packages/server/src/services/account-service.ts';
import { openStore, storageLocation } from '../../packages/server/src/store/open-store.ts';

const config = loadConfig({
  DATA_DIR: mkdtempSync(join(tmpdir(), 'gate402-bench-')),
  PORT: '0',
  LOCALNET_PORT: '0',
  ANVIL_PORT: '0',
  LOG_LEVEL: 'warn',
  GATE402_DEMO: 'false',
});
const { store } = await openStore(storageLocation(config));
const accounts = new AccountService(store);
const account = await accounts.createAccount({ name: 'bench', plan: 'enterprise', rateLimit: 1_000_000 });
const { key } = await accounts.createKey(account.id, 'bench');
await store.close();

const server = await startServer(config);
process.stdout.write(`PORT ${new URL(server.url).port}\nKEY ${key}\n`);
