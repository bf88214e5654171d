// gate402 as `npm start` runs it (SQLite, embedded localnet), with Enterprise accounts whose limits the
// benchmark does not reach, a funded custodial wallet, and 100,000 stored payments for status and history.
// An Enterprise account may have at most 1,000,000 requests a minute, which status at ~50,000 req/s uses
// up within a minute: each status measure asks as its own account, the owner of its payment.
// Prints PORT, KEY and WALLET (the buyer's, with the stored history), SELLER_KEY, SELLER_WALLET,
// PAYMENT_ID (finalized) with PAYMENT_KEY, and NOT_FINAL_PAYMENT_ID (expired) with NOT_FINAL_KEY, then
// serves until killed.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../packages/server/src/config.ts';
import { newId } from '../../packages/server/src/domain/ids.ts';
import { startServer } from '../../packages/server/src/server.ts';
import { newPayment } from '../../packages/server/src/services/payments/new-payment.ts';

const STORED_PAYMENTS = Number(process.env.BENCH_STORED_PAYMENTS ?? 100_000);
if (!(STORED_PAYMENTS >= 2)) throw new Error('BENCH_STORED_PAYMENTS must be at least 2');

const config = loadConfig({
  DATA_DIR: mkdtempSync(join(tmpdir(), 'gate402-bench-')),
  PORT: '0',
  LOCALNET_PORT: '0',
  ANVIL_PORT: '0',
  LOG_LEVEL: 'warn',
  GATE402_DEMO: 'false',
});
const server = await startServer(config);
const { services, store } = server;

async function party(name: string) {
  const account = await services.accounts.createAccount({ name, plan: 'enterprise', rateLimit: 1_000_000 });
  const { key } = await services.accounts.createKey(account.id, 'bench');
  const wallet = await services.wallets.create(account.id, { chain: 'solana' });
  return { accountId: account.id, key, wallet: wallet.address };
}

const buyer = await party('bench buyer');
const seller = await party('bench seller');
const finalizedOwner = await party('bench status (finalized)');
const notFinalOwner = await party('bench status (not final)');
const chain = server.networks.all().find((c) => c.info.family === 'solana');
if (chain?.faucet === undefined) throw new Error('no local Solana faucet');
for (let i = 0; i < 10; i++) await chain.faucet.fundNative(buyer.wallet, 100_000_000_000n);

// Stored history: what a busy wallet has after a while.
const base = Date.now() - STORED_PAYMENTS * 1_000;
let last = '';
let notFinal = '';
await store.transaction(async (tx) => {
  for (let i = 0; i < STORED_PAYMENTS; i++) {
    // One that expired unsent (a state a payment can still leave), which status serves from memory only
    // while nothing is written to the database; the others are finalized, which status reads once
    // (PaymentStatusCache).
    const expired = i === STORED_PAYMENTS - 2;
    const owner = expired ? notFinalOwner : i === STORED_PAYMENTS - 1 ? finalizedOwner : buyer;
    const payment = newPayment(base + i * 1_000, {
      id: newId('pay', base + i * 1_000),
      accountId: owner.accountId,
      direction: i % 3 === 0 ? 'received' : 'sent',
      mode: 'custodial',
      status: expired ? 'expired' : 'finalized',
      network: chain.info.id,
      walletAddress: owner.wallet,
      sender: owner.wallet,
      recipient: seller.wallet,
      amount: 1_000_000n + BigInt(i),
      fee: 5_000n,
      resource: 'https://api.example.com/data',
      metadata: { i },
      signature: `bench${i}`,
      slot: BigInt(i),
      blockHeight: BigInt(i),
      createdAt: base + i * 1_000,
      updatedAt: base + i * 1_000,
      confirmedAt: expired ? null : base + i * 1_000,
    });
    await tx.payments.insert(payment);
    if (expired) notFinal = payment.id;
    else last = payment.id;
  }
});

process.stdout.write(
  [
    `PORT ${new URL(server.url).port}`,
    `KEY ${buyer.key}`,
    `WALLET ${buyer.wallet}`,
    `SELLER_KEY ${seller.key}`,
    `SELLER_WALLET ${seller.wallet}`,
    `PAYMENT_ID ${last}`,
    `PAYMENT_KEY ${finalizedOwner.key}`,
    `NOT_FINAL_PAYMENT_ID ${notFinal}`,
    `NOT_FINAL_KEY ${notFinalOwner.key}`,
    '',
  ].join('\n'),
);

// BENCH_CPU_PROFILE=<file>: SIGUSR2 starts a CPU profile, the next SIGUSR2 writes it there (bench/receive.ts
// profiles its measured passes only, not the set-up or the sends).
const profileFile = process.env.BENCH_CPU_PROFILE;
if (profileFile !== undefined) {
  const session = new Session();
  session.connect();
  let profiling = false;
  process.on('SIGUSR2', () => {
    profiling = !profiling;
    void (async () => {
      if (profiling) {
        await session.post('Profiler.enable');
        await session.post('Profiler.setSamplingInterval', { interval: 200 });
        await session.post('Profiler.start');
      } else {
        const { profile } = await session.post('Profiler.stop');
        writeFileSync(profileFile, JSON.stringify(profile));
      }
    })();
  });
}
