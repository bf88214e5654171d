// GET /payment/history (limit 50, 100,000 stored) over HTTP: a bare Fastify route, the gateway of another
// tree (BENCH_BEFORE_DIR: an export of the code to compare with, e.g. `git archive <commit> | tar -x -C dir`
// with node_modules linked in) and this tree's gateway, each its own process started side by side, loaded
// by autocannon as `npm run bench` loads them, in BENCH_ROUNDS rounds (default 6) of BENCH_ROUND_SECONDS
// (default 3), the order reversed every other round. Prints req/s, the median of the rounds' ratios to the
// bare route, and each server's event-loop CPU per request (its main thread's time in /proc), which a
// loaded machine disturbs far less than req/s. Not part of `npm run bench` (#31).
import { join } from 'node:path';
import { load, startServerProcess } from './http-load.ts';
import { mainThreadCpuMs } from './thread-cpu.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SECONDS = Number(process.env.BENCH_ROUND_SECONDS ?? 3);
const beforeDir = process.env.BENCH_BEFORE_DIR;
if (beforeDir === undefined) throw new Error('BENCH_BEFORE_DIR: the tree to compare with');

const keys = ['PORT', 'KEY', 'WALLET'];
const servers = await Promise.all([
  startServerProcess(new URL('./servers/bare-fastify.ts', import.meta.url).pathname, ['PORT']),
  startServerProcess(join(beforeDir, 'bench/servers/payments-gateway.ts'), keys),
  startServerProcess(new URL('./servers/payments-gateway.ts', import.meta.url).pathname, keys),
]);
try {
  const [bare, before, after] = servers;
  const history = (s: typeof before) => ({
    url: `http://127.0.0.1:${s.values.PORT}/payment/history/${s.values.WALLET}?limit=50`,
    headers: { authorization: `Bearer ${s.values.KEY}` },
    pid: s.child.pid,
  });
  const targets = {
    bare: { url: `http://127.0.0.1:${bare.values.PORT}/constant`, headers: {}, pid: bare.child.pid },
    before: history(before),
    after: history(after),
  };
  for (const t of Object.values(targets)) await load(t.url, t.headers, 1);
  const names = Object.keys(targets) as (keyof typeof targets)[];
  const rps: Record<string, number[]> = {};
  const cpu: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const t = targets[name];
      const cpu0 = mainThreadCpuMs(t.pid) ?? Number.NaN;
      const result = await load(t.url, t.headers, SECONDS);
      const cpu1 = mainThreadCpuMs(t.pid) ?? Number.NaN;
      if (result.non2xx > 0) throw new Error(`${name}: ${result.non2xx} non-2xx answers`);
      rps[name] = [...(rps[name] ?? []), result.requestsPerSecond];
      cpu[name] = [...(cpu[name] ?? []), ((cpu1 - cpu0) * 1000) / (result.requestsPerSecond * SECONDS)];
    }
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const m = Math.floor(s.length / 2);
    return s.length % 2 === 1 ? (s[m] ?? Number.NaN) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
  };
  for (const name of names) {
    const ratios = (rps[name] ?? []).map((x, i) => x / (rps.bare?.[i] ?? Number.NaN));
    console.log(
      `${name.padEnd(7)} req/s ${(rps[name] ?? []).map((x) => x.toFixed(0)).join(', ')} | ratio to bare ${median(ratios).toFixed(2)} | event-loop CPU µs per request ${(cpu[name] ?? []).map((x) => x.toFixed(0)).join(', ')} (median ${median(cpu[name] ?? []).toFixed(0)})`,
    );
  }
} finally {
  for (const s of servers) s.child.kill();
}
