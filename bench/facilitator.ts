import autocannon from 'autocannon';
import type { Benchmark, BenchRow } from './bench-row.ts';
import { type LoadResult, startServerProcess } from './http-load.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = 2;

/**
 * Issue 7's figure: POST /facilitator/verify on one identical x402 `exact` Solana payload, against
 * @x402/core's x402Facilitator with @x402/svm's facilitator scheme in a minimal Express app, both on
 * the same embedded localnet over HTTP RPC and with the same fee-payer key, loaded in turns.
 * Target: gate402 ≥ 1.5× the reference's requests/s with a lower p99.
 */
const facilitatorBenchmark: Benchmark = async () => {
  const gw = await startServerProcess(new URL('./servers/facilitator-gateway.ts', import.meta.url).pathname, [
    'PORT',
    'KEY',
    'BODY',
    'RPC_URL',
    'FEE_PAYER_SECRET',
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
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, target] of targets.entries())
        runs[i]?.push(await post(target.url, target.authorization, body));
    }
    const [gateway, stock] = runs.map(average);
    if (gateway === undefined || stock === undefined) return [];
    if (gateway.non2xx > 0 || stock.non2xx > 0) throw new Error('a facilitator answered non-2xx under load');
    const ratio = gateway.requestsPerSecond / stock.requestsPerSecond;
    const rows: BenchRow[] = [
      {
        name: 'POST /facilitator/verify, identical exact Solana payload',
        value: Math.round(gateway.requestsPerSecond),
        unit: 'req/s',
        reference: {
          name: '@x402/core x402Facilitator + @x402/svm (Express)',
          value: Math.round(stock.requestsPerSecond),
        },
        target: '>= 1.5x reference, lower p99',
        met: ratio >= 1.5 && gateway.p99Ms < stock.p99Ms,
      },
      {
        name: '/facilitator/verify p99',
        value: gateway.p99Ms,
        unit: 'ms',
        reference: { name: 'reference p99', value: stock.p99Ms },
      },
    ];
    return rows;
  } finally {
    reference?.child.kill();
    gw.child.kill();
  }
};

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
