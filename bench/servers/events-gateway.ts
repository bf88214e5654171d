// gate402's event side as `npm start` runs it (SQLite file, in-process wake-ups), with premium accounts
// for the payment stream benchmark. Prints its port and the accounts' keys; on "go SECONDS RATE" on stdin
// it records RATE payments per second for SECONDS through the real ledger (one transaction each, the
// payment and its outbox event together), spread over the accounts, then prints "DONE <count>".
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { NetworkRegistry } from '../../packages/server/src/chains/network-registry.ts';
import { loadConfig } from '../../packages/server/src/config.ts';
import { newId } from '../../packages/server/src/domain/ids.ts';
import { createGateway, createLogger } from '../../packages/server/src/gateway.ts';
import { newPayment } from '../../packages/server/src/services/payments/new-payment.ts';

const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 200);
const config = loadConfig({
  DATA_DIR: mkdtempSync(join(tmpdir(), 'gate402-bench-events-')),
  LOG_LEVEL: 'warn',
});
// Built as `npm start` builds it, without chains (none is needed to record payments) or the dashboard.
const gateway = await createGateway(config, {
  networks: new NetworkRegistry([]),
  masterKey: new Uint8Array(randomBytes(32)),
  instanceId: 'bench',
  logger: createLogger(config),
  httpLogger: null,
  services: { confirmTimeoutMs: 1_000, proofMaxAgeMs: 3_600_000, authCacheMs: 60_000 },
  dashboard: false,
  demoAccount: false,
});
gateway.startJobs(['webhook-delivery', 'event-retention']);
const { app, services } = gateway;
await app.listen({ port: 0, host: '127.0.0.1' });

const accounts: { id: string; key: string }[] = [];
for (let i = 0; i < ACCOUNTS; i++) {
  const account = await services.accounts.createAccount({
    name: `bench ${i}`,
    plan: 'enterprise',
    rateLimit: 1_000_000,
  });
  accounts.push({ id: account.id, key: (await services.accounts.createKey(account.id, 'bench')).key });
}
const address = app.server.address();
process.stdout.write(
  `PORT ${typeof address === 'object' && address !== null ? address.port : 0}\nKEYS ${accounts.map((a) => a.key).join(',')}\n`,
);

for await (const line of createInterface({ input: process.stdin })) {
  const [command, seconds, rate] = line.trim().split(' ');
  if (command !== 'go') continue;
  const total = Math.round(Number(seconds) * Number(rate));
  const intervalMs = 1_000 / Number(rate);
  const started = performance.now();
  let written = 0;
  const commitMs: number[] = [];
  /** paymentId → wall-clock ms (sub-ms) when its transaction had committed, for the driver's latency. */
  const committedAt: Record<string, number> = {};
  const writes: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + i * intervalMs;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const account = accounts[i % accounts.length];
    if (account === undefined) continue;
    const wallet = `BenchWallet${i % accounts.length}`;
    const before = performance.now();
    const paymentId = newId('pay');
    writes.push(
      services.ledger
        .record(
          newPayment(Date.now(), {
            id: paymentId,
            accountId: account.id,
            direction: 'received',
            mode: 'custodial',
            status: 'submitted',
            network: 'solana:bench',
            walletAddress: wallet,
            sender: 'BenchPayer',
            recipient: wallet,
            amount: 1_000_000n,
          }),
          { event: 'payment.received' },
        )
        .then(() => {
          written++;
          commitMs.push(performance.now() - before);
          committedAt[paymentId] = performance.timeOrigin + performance.now();
        }),
    );
  }
  await Promise.all(writes);
  commitMs.sort((a, b) => a - b);
  const p99 = commitMs[Math.floor(commitMs.length * 0.99)] ?? 0;
  process.stdout.write(`COMMITS ${JSON.stringify(committedAt)}\n`);
  process.stdout.write(
    `DONE ${written} ${((performance.now() - started) / 1000).toFixed(2)} ${p99.toFixed(1)}\n`,
  );
}
