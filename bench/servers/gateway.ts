// gate402 as `npm start` runs it (SQLite file, in-process rate limiter), with Enterprise keys whose limit
// the benchmark cannot reach, so every request is authenticated, counted and answered in full: the most
// an Enterprise plan may have is 1,000,000 requests a minute, which one key under load reaches in about
// 20 s on a fast day, so each round of the benchmark takes its own account's key (KEYS, comma-separated).
// Prints its port and the keys, then serves until killed.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../packages/server/src/config.ts';
import { startServer } from '../../packages/server/src/server.ts';
import { AccountService } from '../../packages/server/src/services/accounts/account-service.ts';
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
const keys: string[] = [];
for (let i = 0; i < Number(process.env.BENCH_ACCOUNTS ?? 16); i++) {
  const account = await accounts.createAccount({
    name: `bench ${i}`,
    plan: 'enterprise',
    rateLimit: 1_000_000,
  });
  keys.push((await accounts.createKey(account.id, 'bench')).key);
}
await store.close();

const server = await startServer(config);
process.stdout.write(`PORT ${new URL(server.url).port}\nKEYS ${keys.join(',')}\n`);
