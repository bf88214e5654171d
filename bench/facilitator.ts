import { createKeyPairSignerFromBytes } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import type { PaymentRequirements } from '@x402/core/types';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import autocannon from 'autocannon';
import type { Benchmark, BenchRow } from './bench-row.ts';
import { type LoadResult, startServerProcess } from './http-load.ts';
import { closedLoop, type LeanResult, type LeanTarget } from './lean-load.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = 2;
/** Settlements per pass: each needs a payload of its own, signed beforehand (a settle is final). */
const SETTLEMENTS = Number(process.env.BENCH_SETTLEMENTS ?? 300);
/** Settles in flight: each waits for its transaction to be confirmed (400 ms slots). */
const SETTLE_CONNECTIONS = 50;

/**
 * Issue 7's figure: POST /facilitator/verify on one identical x402 `exact` Solana payload, against
 * @x402/core's x402Facilitator with @x402/svm's facilitator scheme in a minimal Express app, both on
 * the same embedded localnet over HTTP RPC and with the same fee-payer key, loaded in turns.
 * Target (issue 31): gate402 ≥ 3× the reference's requests/s with a lower p99.
 */
const facilitatorBenchmark: Benchmark = async () => {
  const gw = await startServerProcess(new URL('./servers/facilitator-gateway.ts', import.meta.url).pathname, [
    'PORT',
    'KEY',
    'BODY',
    'RPC_URL',
    'FEE_PAYER_SECRET',
    'BUYER_SECRET',
    'REQUIREMENTS',
  ]);
  const v = gw.values as Record<string, string>;
  process.env.RPC_URL = v.RPC_URL;
  process.env.FEE_PAYER_SECRET = v.FEE_PAYER_SECRET;
  let reference: Awaited<ReturnType<typeof startServerProcess>> | undefined;
  try {
    reference = await startServerProcess(
      new URL('./servers/x402-reference-facilitator.ts', import.meta.url).pathname,
      ['PORT'],
    );
    const body = Buffer.from(v.BODY ?? '', 'base64').toString('utf8');
    const targets = [
      { url: `http://127.0.0.1:${v.PORT}/facilitator/verify`, authorization: `Bearer ${v.KEY}` },
      { url: `http://127.0.0.1:${reference.values.PORT}/verify` },
    ];
    for (const target of targets) await valid(target.url, target.authorization, body);
    const runs: LoadResult[][] = [[], []];
    // Paired rounds: the two one straight after the other, their order swapped each round; the ratio is
    // the median of the rounds' ratios (see compareInRounds).
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const target = targets[i];
        if (target !== undefined) runs[i]?.push(await post(target.url, target.authorization, body));
      }
    }
    const [gateway, stock] = runs.map(average);
    if (gateway === undefined || stock === undefined) return [];
    if (gateway.non2xx > 0 || stock.non2xx > 0) throw new Error('a facilitator answered non-2xx under load');
    const ratio = median(
      (runs[0] ?? []).map((g, i) => g.requestsPerSecond / (runs[1]?.[i]?.requestsPerSecond ?? Number.NaN)),
    );
    const rows: BenchRow[] = [
      {
        name: 'POST /facilitator/verify, identical exact Solana payload',
        value: Math.round(gateway.requestsPerSecond),
        unit: 'req/s',
        reference: {
          name: '@x402/core x402Facilitator + @x402/svm (Express)',
          value: Math.round(stock.requestsPerSecond),
        },
        ratio,
        target: '>= 3x reference, lower p99',
        met: ratio >= 3 && gateway.p99Ms < stock.p99Ms,
      },
      {
        name: '/facilitator/verify p99',
        value: gateway.p99Ms,
        unit: 'ms',
        reference: { name: 'reference p99', value: stock.p99Ms },
      },
    ];
    rows.push(
      ...(await settleRows(
        { port: Number(v.PORT), path: '/facilitator/settle', headers: { authorization: `Bearer ${v.KEY}` } },
        { port: Number(reference.values.PORT), path: '/settle', headers: {} },
        await payloadMaker(v),
      )),
    );
    return rows;
  } finally {
    reference?.child.kill();
    gw.child.kill();
  }
};

/**
 * POST /facilitator/settle against the reference's settle, exact on Solana: closed loop, each pass with
 * SETTLEMENTS payloads of its own made by a stock @x402/svm buyer just before it (a blockhash lasts
 * about a minute), SETTLE_CONNECTIONS in flight, the two passes of a round one straight after the
 * other and their order swapped each round. Both co-sign as the same fee payer on the same localnet and
 * answer when the transaction is confirmed.
 */
async function settleRows(
  gateway: LeanTarget,
  reference: LeanTarget,
  makePayloads: (count: number) => Promise<string[]>,
): Promise<BenchRow[]> {
  // Settlements per second count successes only; a refusal under load is counted apart (`failed`).
  const pass = async (target: LeanTarget, count: number) => {
    const result = await closedLoop(target, await makePayloads(count), SETTLE_CONNECTIONS);
    return { ...result, perSecond: (result.perSecond * (count - result.failed)) / count };
  };
  // Warm-up: the first settlements open connections, compile code and create the payee's records.
  await pass(gateway, 20);
  await pass(reference, 20);
  const gateways: LeanResult[] = [];
  const references: LeanResult[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      references.push(await pass(reference, SETTLEMENTS));
      gateways.push(await pass(gateway, SETTLEMENTS));
    } else {
      gateways.push(await pass(gateway, SETTLEMENTS));
      references.push(await pass(reference, SETTLEMENTS));
    }
  }
  const mean = (runs: LeanResult[]) => runs.reduce((sum, r) => sum + r.perSecond, 0) / runs.length;
  const ratios = gateways.map((g, i) => g.perSecond / (references[i]?.perSecond ?? Number.NaN));
  const p99 = (runs: LeanResult[]) => median(runs.map((r) => r.p99Ms));
  const failed = (runs: LeanResult[]) => runs.reduce((sum, r) => sum + r.failed, 0);
  return [
    {
      name: `POST /facilitator/settle, exact Solana, ${SETTLE_CONNECTIONS} in flight, ${ROUNDS} paired rounds of ${SETTLEMENTS} (failed: ${failed(gateways)}, reference ${failed(references)})`,
      value: Math.round(mean(gateways)),
      unit: 'settlements/s',
      reference: {
        name: '@x402/core x402Facilitator + @x402/svm settle (Express)',
        value: Math.round(mean(references)),
      },
      ratio: median(ratios),
    },
    {
      name: '/facilitator/settle p99 (answer after confirmation)',
      value: p99(gateways),
      unit: 'ms',
      reference: { name: 'reference p99', value: p99(references) },
    },
  ];
}

/** Signs payloads for the settle benchmark as a stock @x402/svm buyer, each with its own memo nonce. */
async function payloadMaker(values: Record<string, string>): Promise<(count: number) => Promise<string[]>> {
  const buyer = await createKeyPairSignerFromBytes(Buffer.from(values.BUYER_SECRET ?? '', 'hex'));
  const requirements = JSON.parse(
    Buffer.from(values.REQUIREMENTS ?? '', 'base64').toString('utf8'),
  ) as PaymentRequirements;
  const client = x402Client.fromConfig({
    schemes: [
      { network: requirements.network, client: new ExactSvmScheme(buyer, { rpcUrl: values.RPC_URL ?? '' }) },
    ],
    spendControls: false,
  });
  const one = async () => {
    const paymentPayload = await client.createPaymentPayload({
      x402Version: 2,
      resource: { url: 'https://bench.example/report' },
      accepts: [requirements],
    });
    return JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements: requirements });
  };
  return async (count) => {
    const bodies: string[] = [];
    while (bodies.length < count)
      bodies.push(...(await Promise.all(Array.from({ length: Math.min(16, count - bodies.length) }, one))));
    return bodies;
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? 0)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/** One request first: both must say the payload is valid, or the figures compare refusals. */
async function valid(url: string, authorization: string | undefined, body: string): Promise<void> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(authorization === undefined ? {} : { authorization }),
    },
    body,
  });
  const answer = (await res.json()) as { isValid?: boolean };
  if (answer.isValid !== true)
    throw new Error(`${url} did not verify the payload: ${JSON.stringify(answer)}`);
}

async function post(url: string, authorization: string | undefined, body: string): Promise<LoadResult> {
  const result = await autocannon({
    url,
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(authorization === undefined ? {} : { authorization }),
    },
    body,
    connections: 50,
    duration: SECONDS,
  });
  return {
    requestsPerSecond: result.requests.average,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx + result.errors,
  };
}

function average(runs: LoadResult[]): LoadResult | undefined {
  if (runs.length === 0) return undefined;
  const sorted = runs.map((r) => r.p99Ms).sort((a, b) => a - b);
  return {
    requestsPerSecond: runs.reduce((sum, r) => sum + r.requestsPerSecond, 0) / runs.length,
    p99Ms: sorted[Math.floor(sorted.length / 2)] ?? 0,
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
  };
}

export default facilitatorBenchmark;
