import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSigner } from '@solana/kit';
import { HTTPFacilitatorClient } from '@x402/core/server';
import type { Network } from '@x402/core/types';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch';
import { ExactSvmScheme as SvmBuyerScheme } from '@x402/svm/exact/client';
import { ExactSvmScheme as SvmSellerScheme } from '@x402/svm/exact/server';
import express from 'express';
import { Gate402Client, payingFetch } from '../packages/client/src/index.ts';
import { loadConfig } from '../packages/server/src/config.ts';
import { startServer } from '../packages/server/src/server.ts';
import { SOLANA_DEVNET_ID } from '../packages/server/src/x402/network-names.ts';
import type { Benchmark, BenchRow } from './bench-row.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
/** Buyers paying at once, each with its own wallet (custodial) or key (reference), one payment at a time. */
const BUYERS = Number(process.env.BENCH_X402_BUYERS ?? 16);
const ROUNDS = 2;

/**
 * Issue 28's figure: x402 payments to a stock `@x402/express` seller on the embedded Solana chain (its
 * facilitator gate402's built-in one), end to end — the 402, the payment, the paid answer — paid by
 * buyers holding only a gate402 API key (`payingFetch` with `maxTokenAmounts`: POST /payment/x402 signs
 * with the custodial key) beside the same seller paid by the stock `@x402/fetch` client with a local key
 * (the reference), in turns in one run, in one process. The seller's settlement (the facilitator waits for
 * `confirmed`) is common to both; the difference is the custodial signing round trip and its recording.
 */
const x402PayBenchmark: Benchmark = async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gate402-bench-x402-pay-'));
  const server = await startServer(
    loadConfig({
      DATA_DIR: dataDir,
      PORT: '0',
      LOCALNET_PORT: '0',
      ANVIL_PORT: '0',
      LOG_LEVEL: 'warn',
      GATE402_DEMO: 'false',
    }),
  );
  let closeShop: (() => Promise<void>) | undefined;
  try {
    const { services } = server;
    const account = await services.accounts.createAccount({
      name: 'bench x402 pay',
      plan: 'enterprise',
      rateLimit: 1_000_000,
    });
    const { key } = await services.accounts.createKey(account.id, 'bench');
    const chain = server.networks.all().find((c) => c.info.family === 'solana' && c.info.isLocal);
    const usdc = chain?.info.tokens[0];
    if (chain?.faucet === undefined || usdc === undefined) throw new Error('no local Solana faucet');
    const faucet = chain.faucet;
    const seller = await services.wallets.create(account.id, { chain: 'solana' });
    await faucet.fundToken(usdc.symbol, seller.address, 1n);

    const headers = { Authorization: `Bearer ${key}` };
    const resourceServer = new x402ResourceServer(
      new HTTPFacilitatorClient({
        url: `${server.url}/facilitator`,
        createAuthHeaders: async () => ({ verify: headers, settle: headers, supported: headers }),
      }),
    );
    resourceServer.register(SOLANA_DEVNET_ID as Network, new SvmSellerScheme());
    const app = express();
    app.use(
      paymentMiddleware(
        {
          'GET /report': {
            accepts: {
              scheme: 'exact',
              network: SOLANA_DEVNET_ID as Network,
              payTo: seller.address,
              price: { amount: '1000', asset: usdc.address },
            },
          },
        },
        resourceServer,
      ),
    );
    app.get('/report', (_req, res) => void res.json({ report: 'paid' }));
    const listening = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => listening.once('listening', resolve));
    closeShop = () => new Promise((resolve) => listening.close(() => resolve()));
    const url = `http://127.0.0.1:${(listening.address() as AddressInfo).port}/report`;

    const gateway = new Gate402Client({ url: server.url, apiKey: key });
    const custodial: (typeof fetch)[] = [];
    const stock: (typeof fetch)[] = [];
    for (let i = 0; i < BUYERS; i++) {
      const wallet = await services.wallets.create(account.id, { chain: 'solana' });
      await faucet.fundToken(usdc.symbol, wallet.address, 1_000_000_000n);
      custodial.push(
        payingFetch({ gateway, wallet: wallet.address, maxAmount: '0.001', maxTokenAmounts: { USDC: 0.01 } }),
      );
      const local = await generateKeyPairSigner();
      await faucet.fundToken(usdc.symbol, local.address, 1_000_000_000n);
      stock.push(
        wrapFetchWithPaymentFromConfig(fetch, {
          schemes: [
            {
              network: SOLANA_DEVNET_ID as Network,
              client: new SvmBuyerScheme(local, { rpcUrl: chain.info.rpcUrl }),
            },
          ],
          spendControls: false,
        }),
      );
    }
    // One paid request each first: both flows must work, or the figures compare failures.
    for (const pay of [custodial[0], stock[0]]) {
      const answer = await pay?.(url);
      if (answer?.status !== 200) throw new Error(`a warm-up payment answered ${answer?.status}`);
    }

    const runs: Load[][] = [[], []];
    for (let round = 0; round < ROUNDS; round++) {
      runs[0]?.push(await load(custodial, url));
      runs[1]?.push(await load(stock, url));
    }
    const [gw, ref] = runs.map(merged);
    if (gw === undefined || ref === undefined) return [];
    if (gw.failed > 0 || ref.failed > 0) {
      throw new Error(`payments failed under load: custodial ${gw.failed}, reference ${ref.failed}`);
    }
    const rows: BenchRow[] = [
      {
        name: `x402 payments to a stock @x402/express seller, Solana localnet, ${BUYERS} buyers (payingFetch + POST /payment/x402)`,
        value: Math.round(gw.perSecond * 10) / 10,
        unit: 'payments/s',
        reference: { name: '@x402/fetch with a local key', value: Math.round(ref.perSecond * 10) / 10 },
      },
      {
        name: 'x402 payment p99 (402, payment, paid answer), custodial',
        value: gw.p99Ms,
        unit: 'ms',
        reference: { name: '@x402/fetch p99', value: ref.p99Ms },
      },
    ];
    return rows;
  } finally {
    await closeShop?.();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
};

interface Load {
  readonly payments: number;
  readonly seconds: number;
  readonly latenciesMs: number[];
  readonly failed: number;
}

/** Every buyer pays in a loop for SECONDS, one payment at a time; what was paid, and how long each took. */
async function load(buyers: readonly (typeof fetch)[], url: string): Promise<Load> {
  const latenciesMs: number[] = [];
  let failed = 0;
  const started = performance.now();
  const until = started + SECONDS * 1000;
  await Promise.all(
    buyers.map(async (pay) => {
      while (performance.now() < until) {
        const at = performance.now();
        try {
          const answer = await pay(url);
          await answer.arrayBuffer();
          if (answer.status === 200) latenciesMs.push(performance.now() - at);
          else failed++;
        } catch {
          failed++;
        }
      }
    }),
  );
  return { payments: latenciesMs.length, seconds: (performance.now() - started) / 1000, latenciesMs, failed };
}

function merged(runs: Load[]): { perSecond: number; p99Ms: number; failed: number } | undefined {
  if (runs.length === 0) return undefined;
  const latencies = runs.flatMap((r) => r.latenciesMs).sort((a, b) => a - b);
  const payments = runs.reduce((sum, r) => sum + r.payments, 0);
  const seconds = runs.reduce((sum, r) => sum + r.seconds, 0);
  return {
    perSecond: payments / seconds,
    p99Ms: Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0),
    failed: runs.reduce((sum, r) => sum + r.failed, 0),
  };
}

export default x402PayBenchmark;
