import { spawn } from 'node:child_process';
import type { Benchmark, BenchRow } from './bench-row.ts';
import { startServerProcess } from './http-load.ts';
import { type LeanTarget, openLoop } from './lean-load.ts';
import { sendLoad, sendsFinalized, sendsSettled } from './payments.ts';
import { mainThreadCpuMs } from './thread-cpu.ts';

/**
 * `npm run bench -- receive` (#31): POST /payment/receive's event-loop CPU per request at a fixed rate,
 * beside a bare Fastify POST route given the same requests, in paired rounds — without the payments
 * benchmark's status, history and summary parts, so it can be run after each change on a busy machine.
 *
 * With BENCH_BASELINE set to the directory of another tree of this repository (for example
 * `git archive <commit> | tar -x -C <dir>`, with a `node_modules` link to this one's), that tree's
 * gateway runs beside this one, and each round measures the bare route, then both gateways in turn
 * (their order swapped every round): the before/after of a change, paired under the same load.
 *
 * With BENCH_CPU_PROFILE=<file>, this tree's gateway writes a CPU profile of its receive passes only
 * (bench/servers/payments-gateway.ts starts and stops it on SIGUSR2).
 *
 * The CPU time is the gateway main thread's, from /proc (user + system): what every request shares. A
 * shared machine's load slows a pass down but changes the CPU a request costs far less.
 */
const RATE = Number(process.env.BENCH_RECEIVE_RATE ?? 1_000);
const ROUNDS = Number(process.env.BENCH_RECEIVE_ROUNDS ?? 4);
const PASS = Number(process.env.BENCH_RECEIVE_PASS ?? RATE * 2);
const WARM_UP = 500;
const CONNECTIONS = 100;
/**
 * BENCH_RECEIVE_KEYED=1: each round also measures the same gateway with every receive carrying an
 * Idempotency-Key of its own, as the SDK sends it (its claim and its stored answer are commits of their own).
 */
const KEYED = process.env.BENCH_RECEIVE_KEYED === '1';
// The gateways' stored history (bench/servers/payments-gateway.ts): none to speak of unless asked, as
// the receive path reads none of it and a busy machine takes minutes to write 100,000 payments.
process.env.BENCH_STORED_PAYMENTS ??= '2';

interface Gateway {
  readonly name: string;
  readonly pid: number | undefined;
  readonly target: LeanTarget;
  readonly bodies: string[];
  readonly cpus: number[];
  readonly p99s: number[];
  readonly stop: () => void;
  readonly signal: (name: NodeJS.Signals) => void;
}

const receiveBenchmark: Benchmark = async () => {
  const started: { stop: () => void }[] = [];
  const rows: BenchRow[] = [];
  try {
    const bare = await startServerProcess(new URL('./servers/bare-fastify.ts', import.meta.url).pathname, [
      'PORT',
    ]);
    started.push({ stop: () => bare.child.kill('SIGTERM') });
    const trees: [string, string][] = [['this tree', new URL('..', import.meta.url).pathname]];
    if (process.env.BENCH_BASELINE !== undefined) trees.push(['baseline', process.env.BENCH_BASELINE]);
    const gateways: Gateway[] = [];
    for (const [name, root] of trees) {
      const gw = await startServerProcess(`${root.replace(/\/$/, '')}/bench/servers/payments-gateway.ts`, [
        'PORT',
        'KEY',
        'WALLET',
        'SELLER_KEY',
        'SELLER_WALLET',
      ]);
      started.push({ stop: () => gw.child.kill('SIGTERM') });
      const v = gw.values as Record<string, string>;
      const each = WARM_UP + ROUNDS * PASS;
      const bodies = await proofsOf(v, KEYED ? 2 * each : each);
      const side = (sideName: string, keyed: boolean, from: number): Gateway => ({
        name: sideName,
        pid: gw.child.pid,
        target: {
          port: Number(v.PORT),
          path: '/payment/receive',
          headers: { authorization: `Bearer ${v.SELLER_KEY}` },
          idempotencyKeys: keyed,
        },
        bodies: bodies.slice(from, from + each),
        cpus: [],
        p99s: [],
        stop: () => gw.child.kill('SIGTERM'),
        signal: (s) => gw.child.kill(s),
      });
      gateways.push(side(name, false, 0));
      // The same gateway again, each request with its own key: the keyed receive's extra cost, paired.
      if (KEYED) gateways.push(side(`${name}, with Idempotency-Key`, true, each));
    }
    const bareTarget: LeanTarget = { port: Number(bare.values.PORT), path: '/constant', headers: {} };
    const bareCpus: number[] = [];
    const sample = gateways[0]?.bodies ?? [];
    await openLoop(bareTarget, sample.slice(0, WARM_UP), CONNECTIONS, RATE);
    for (const gw of gateways) {
      const warm = await openLoop(gw.target, gw.bodies.slice(0, WARM_UP), CONNECTIONS, RATE);
      if (warm.failed > 0) throw new Error(`${gw.name}: ${warm.failed} receives failed in the warm-up`);
    }
    const profiling = process.env.BENCH_CPU_PROFILE !== undefined;
    if (profiling) gateways[0]?.signal('SIGUSR2');
    // BENCH_PERF=<file>: `perf record` of this tree's event-loop thread, on its CPU time (cpu-clock counts
    // only while the thread runs; V8's own profiler samples wall time, which a loaded machine's
    // preemption spreads over whatever was on the stack). Run with NODE_OPTIONS=--perf-basic-prof.
    const perf =
      process.env.BENCH_PERF === undefined || gateways[0]?.pid === undefined
        ? undefined
        : spawn(
            'perf',
            [
              'record',
              '-e',
              'cpu-clock',
              '-F',
              '4000',
              '-g',
              '-t',
              String(gateways[0].pid),
              '-o',
              process.env.BENCH_PERF,
            ],
            {
              stdio: 'ignore',
            },
          );
    for (let round = 0; round < ROUNDS; round++) {
      const bodies = (gw: Gateway) => gw.bodies.slice(WARM_UP + round * PASS, WARM_UP + (round + 1) * PASS);
      await cpuOf(bare.child.pid, bareCpus, () =>
        openLoop(bareTarget, sample.slice(WARM_UP, WARM_UP + PASS), CONNECTIONS, RATE),
      );
      const order = round % 2 === 0 ? gateways : [...gateways].reverse();
      for (const gw of order) {
        const result = await cpuOf(gw.pid, gw.cpus, () => openLoop(gw.target, bodies(gw), CONNECTIONS, RATE));
        if (result.failed > 0)
          throw new Error(`${gw.name}: ${result.failed} receives failed in a measured pass`);
        gw.p99s.push(result.p99Ms);
      }
      process.stderr.write(
        `round ${round + 1}: bare ${bareCpus.at(-1)?.toFixed(0)} µs; ${gateways
          .map((gw) => `${gw.name} ${gw.cpus.at(-1)?.toFixed(0)} µs (p99 ${gw.p99s.at(-1)} ms)`)
          .join('; ')}\n`,
      );
    }
    if (perf !== undefined) {
      perf.kill('SIGINT');
      await new Promise((resolve) => perf.once('exit', resolve));
    }
    if (profiling) {
      gateways[0]?.signal('SIGUSR2');
      await new Promise((resolve) => setTimeout(resolve, 3_000));
    }
    const reference = { name: 'bare Fastify POST', value: Math.round(median(bareCpus)) };
    for (const gw of gateways) {
      rows.push({
        name: `receive (${gw.name}): event-loop thread CPU per request at ${RATE}/s, median of ${ROUNDS} (rounds ${gw.cpus.map((c) => c.toFixed(0)).join(', ')})`,
        value: Math.round(median(gw.cpus)),
        unit: 'µs',
        reference,
        target: '<= 180 µs',
        met: median(gw.cpus) <= 180,
      });
    }
    const [self, baseline] = gateways;
    if (self !== undefined && baseline !== undefined && gateways.length === 2) {
      // Round by round, so a round's load weighs on both sides alike.
      const ratios = self.cpus.map((c, i) => c / (baseline.cpus[i] ?? Number.NaN));
      rows.push({
        name: `receive CPU, ${self.name} ÷ ${baseline.name}, round by round (${ratios.map((r) => r.toFixed(2)).join(', ')})`,
        value: Math.round(median(ratios) * 100) / 100,
        unit: '×',
      });
    }
  } finally {
    for (const s of started) s.stop();
  }
  return rows;
};

async function cpuOf<T>(pid: number | undefined, into: number[], pass: () => Promise<T>): Promise<T> {
  const before = mainThreadCpuMs(pid);
  const result = await pass();
  const after = mainThreadCpuMs(pid);
  if (before !== undefined && after !== undefined) into.push(((after - before) * 1000) / PASS);
  return result;
}

/** `count` receive bodies, each redeeming its own proof, from sends through the gateway; then waits until
 * the sends are finalized, so their aftermath is not measured. */
async function proofsOf(v: Record<string, string>, count: number): Promise<string[]> {
  const base = `http://127.0.0.1:${v.PORT}`;
  const auth = { authorization: `Bearer ${v.KEY}` };
  const proofs: string[] = [];
  while (proofs.length < count) {
    await sendLoad(base, auth, v, proofs, 4);
    await sendsSettled(base, auth, v.WALLET ?? '');
  }
  await sendsFinalized(base, auth, v.WALLET ?? '');
  return proofs.map((paymentProof) =>
    JSON.stringify({ walletAddress: v.SELLER_WALLET, paymentProof, expectedAmount: 0.001 }),
  );
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
}

export default receiveBenchmark;
