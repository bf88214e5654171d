import type { Benchmark, BenchRow } from './bench-row.ts';
import { compareInRounds, load, startServerProcess } from './http-load.ts';

/**
 * Seconds of load per server, split into ROUNDS paired rounds. Each round, and the warm-up, loads the
 * gateway with its own account's key (see servers/gateway.ts): one Enterprise account's 1,000,000
 * requests a minute last about 20 s at today's 45,000 req/s, and a 429 would end the run.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const ROUNDS = 10;
const TARGET_RATIO = 0.6;

/**
 * GET /account (authenticated, rate-limited, reads storage) against a bare Fastify route returning a
 * constant, in paired rounds in this run with the same load, each server in its own process.
 */
const accountBenchmark: Benchmark = async () => {
  const bare = await startServerProcess(new URL('./servers/bare-fastify.ts', import.meta.url).pathname, [
    'PORT',
  ]);
  const gateway = await startServerProcess(new URL('./servers/gateway.ts', import.meta.url).pathname, [
    'PORT',
    'KEYS',
  ]);
  try {
    const bareUrl = `http://127.0.0.1:${bare.values.PORT}/constant`;
    const gatewayUrl = `http://127.0.0.1:${gateway.values.PORT}/account`;
    const keys = (gateway.values.KEYS ?? '').split(',');
    if (keys.length < ROUNDS + 1)
      throw new Error(`the bench gateway made ${keys.length} keys, not ${ROUNDS + 1}`);
    const auth = (key: string | undefined) => ({ authorization: `Bearer ${key}` });
    // Warm both up (JIT, connection pools) before measuring.
    await load(bareUrl, {}, 2);
    await load(gatewayUrl, auth(keys[ROUNDS]), 2);
    const { reference, measured, ratio } = await compareInRounds(
      { url: bareUrl },
      (round) => ({ url: gatewayUrl, headers: auth(keys[round]) }),
      ROUNDS,
      SECONDS / ROUNDS,
    );
    if (measured.non2xx > 0) throw new Error(`GET /account answered ${measured.non2xx} non-2xx responses`);
    const rows: BenchRow[] = [
      {
        name: 'GET /account throughput',
        value: Math.round(measured.requestsPerSecond),
        unit: 'req/s',
        reference: { name: 'bare Fastify route', value: Math.round(reference.requestsPerSecond) },
        ratio,
        target: `>= ${TARGET_RATIO} of bare`,
        met: ratio >= TARGET_RATIO,
      },
      {
        name: 'GET /account p99 latency',
        value: measured.p99Ms,
        unit: 'ms',
        reference: { name: 'bare Fastify route', value: reference.p99Ms },
      },
    ];
    return rows;
  } finally {
    bare.child.kill('SIGTERM');
    gateway.child.kill('SIGTERM');
  }
};

export default accountBenchmark;
