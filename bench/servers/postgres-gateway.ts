// One gate402 instance on PostgreSQL + Redis, as `gate402 serve` runs it behind a load balancer: storage,
// rate limits and event wake-ups shared with the other instances through DATABASE_URL and REDIS_URL, the
// Solana chain reached at SOLANA_RPC_URL (the benchmark's localnet), the master key given. All of these
// come from the environment the benchmark sets. With BENCH_SETUP=1 it also creates the two parties of
// the benchmark on the shared storage and prints their keys and wallets (KEY, WALLET: the buyer, who
// sends; SELLER_KEY, SELLER_WALLET: the seller, who receives). Prints PORT, then serves until killed.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../packages/server/src/config.ts';
import { startServer } from '../../packages/server/src/server.ts';

// Under this benchmark's load on a 2-core machine the embedded anvil has been seen not to answer in time,
// and a rejection of a background EVM call then ended the process; receives do not touch EVM, so such a
// rejection is printed and the instance keeps serving.
process.on('unhandledRejection', (error) => {
  process.stderr.write(`postgres-gateway: unhandled rejection: ${String(error)}\n`);
});

const config = loadConfig({
  ...process.env,
  DATA_DIR: mkdtempSync(join(tmpdir(), 'gate402-bench-')),
  PORT: '0',
  ANVIL_PORT: '0',
  LOG_LEVEL: 'warn',
  GATE402_DEMO: 'false',
});
const server = await startServer(config);
const lines = [`PORT ${new URL(server.url).port}`];
if (process.env.BENCH_SETUP === '1') {
  const { services } = server;
  for (const [role, prefix] of [
    ['buyer', ''],
    ['seller', 'SELLER_'],
  ] as const) {
    const account = await services.accounts.createAccount({
      name: `bench ${role}`,
      plan: 'enterprise',
      rateLimit: 1_000_000,
    });
    const { key } = await services.accounts.createKey(account.id, 'bench');
    const wallet = await services.wallets.create(account.id, { chain: 'solana' });
    lines.push(`${prefix}KEY ${key}`, `${prefix}WALLET ${wallet.address}`);
  }
}
process.stdout.write(`${lines.join('\n')}\n`);
