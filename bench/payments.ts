import autocannon from 'autocannon';
import type { Benchmark, BenchRow } from './bench-row.ts';
import { compareInRounds, load, startServerProcess } from './http-load.ts';
import { closedLoop, type LeanResult, type LeanTarget, openLoop } from './lean-load.ts';
import { mainThreadCpuMs } from './thread-cpu.ts';

/** Seconds of load per measure; status and history split theirs into ROUNDS paired rounds. */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = 4;
/**
 * Receives: connections, the rate of the open-loop passes, and how many proofs each pass redeems. The
 * open loop runs in OPEN_PASSES passes of 2 s, each beside its bare pass, and the median is printed: on
 * this VM one pass's p99 moved between 17 and 63 ms for the same code.
 */
const CONNECTIONS = 100;
const RECEIVE_RATE = 1_000;
const WARM_UP = 500;
const CLOSED_LOOP = 2_000;
const OPEN_PASSES = 3;
const OPEN_PASS = RECEIVE_RATE * 2;
/** Requests of the sequential latency measures (the dashboard home's summary). */
const SEQUENTIAL = 200;
const PROOFS_NEEDED = WARM_UP + CLOSED_LOOP + OPEN_PASS * OPEN_PASSES;

/**
 * Issue 4's figures, each against its reference in this run:
 * - status (of a finalized payment, and of one not final) and history (limit 50) with 100,000 stored
 *   payments, against a bare Fastify route;
 * - confirmed sends per second and p99 on the embedded chain (target ≥ 300/s);
 * - receive verifications over 100 connections, each pass beside the same requests answered by a bare
 *   Fastify POST route: in a closed loop (throughput, and the p99 of a saturated server), and at
 *   1,000 receives/s (p50 and p99; target p99 ≤ 20 ms). A latency target is a latency at a stated load:
 *   in a closed loop with no pause, 100 connections keep any server saturated and the p99 is set by the
 *   queue (100 ÷ throughput), which on this 2-core machine the bare route itself misses.
 */
const paymentsBenchmark: Benchmark = async () => {
  const bareServer = await startServerProcess(
    new URL('./servers/bare-fastify.ts', import.meta.url).pathname,
    ['PORT'],
  );
  const gw = await startServerProcess(new URL('./servers/payments-gateway.ts', import.meta.url).pathname, [
    'PORT',
    'KEY',
    'WALLET',
    'SELLER_KEY',
    'SELLER_WALLET',
    'PAYMENT_ID',
    'PAYMENT_KEY',
    'NOT_FINAL_PAYMENT_ID',
    'NOT_FINAL_KEY',
  ]);
  const v = gw.values as Record<string, string>;
  const base = `http://127.0.0.1:${v.PORT}`;
  const auth = { authorization: `Bearer ${v.KEY}` };
  const rows: BenchRow[] = [];
  try {
    const bareUrl = `http://127.0.0.1:${bareServer.values.PORT}/constant`;
    await load(bareUrl, {}, 2);
    for (const [name, url, key, target] of [
      [
        'GET /payment/status (finalized payment)',
        `${base}/payment/status/${v.PAYMENT_ID}`,
        v.PAYMENT_KEY,
        0.5,
      ],
      [
        'GET /payment/status (payment not final)',
        `${base}/payment/status/${v.NOT_FINAL_PAYMENT_ID}`,
        v.NOT_FINAL_KEY,
        0.5,
      ],
      [
        'GET /payment/history (limit 50, 100k stored)',
        `${base}/payment/history/${v.WALLET}?limit=50`,
        v.KEY,
        undefined,
      ],
    ] as const) {
      const headers = { authorization: `Bearer ${key}` };
      await load(url, headers, 2);
      const { reference, measured, ratio } = await compareInRounds(
        { url: bareUrl },
        { url, headers },
        ROUNDS,
        SECONDS / ROUNDS,
      );
      if (measured.non2xx > 0) throw new Error(`${name} answered ${measured.non2xx} non-2xx responses`);
      rows.push({
        name: `${name} throughput`,
        value: Math.round(measured.requestsPerSecond),
        unit: 'req/s',
        reference: { name: 'bare Fastify route', value: Math.round(reference.requestsPerSecond) },
        ratio,
        ...(target === undefined ? {} : { target: `>= ${target} of bare`, met: ratio >= target }),
      });
      rows.push({ name: `${name} p99`, value: measured.p99Ms, unit: 'ms' });
    }

    // The dashboard home's figures: one user's page load at a time, so requests one after another on
    // one connection (a closed loop of 100 would only measure the queue), beside the history page
    // the same way.
    await section('account summary', async () => {
      const summary = await sequentialLatency(`${base}/account/summary?days=30`, auth, SEQUENTIAL);
      const history = await sequentialLatency(
        `${base}/payment/history/${v.WALLET}?limit=50`,
        auth,
        SEQUENTIAL,
      );
      rows.push({
        name: 'GET /account/summary (30 days, 100k payments) p50',
        value: summary.p50Ms,
        unit: 'ms',
        reference: { name: 'history page, one at a time', value: history.p50Ms },
      });
      rows.push({
        name: 'GET /account/summary (30 days, 100k payments) p99',
        value: summary.p99Ms,
        unit: 'ms',
        reference: { name: 'history page, one at a time', value: history.p99Ms },
      });
    });

    await section('sends and receives', async () => {
      const proofs: string[] = [];
      const sends = await sendLoad(base, auth, v, proofs);
      rows.push({
        name: 'confirmed sends (embedded chain, 400 ms slots)',
        value: Math.round(sends.confirmedPerSecond),
        unit: 'tx/s',
        target: '>= 300 tx/s',
        met: sends.confirmedPerSecond >= 300,
      });
      rows.push({ name: 'send p99', value: sends.p99Ms, unit: 'ms' });

      // autocannon stops at its deadline with up to 300 sends still in flight in the gateway; receives
      // are measured once those are done, not while they compete for the same CPU and connection.
      await sendsSettled(base, auth, v.WALLET ?? '');
      // A proof is redeemed once: each pass below takes its own. More sends, not measured, when the
      // measured ones left too few (a slow machine).
      while (proofs.length < PROOFS_NEEDED) {
        await sendLoad(base, auth, v, proofs, 4);
        await sendsSettled(base, auth, v.WALLET ?? '');
      }
      // The sends' own aftermath (each confirmed send polled on chain and moved to finalized, with its
      // event) keeps the gateway's event loop busy for a while after the sends: it is left to finish
      // first, so the passes measure receives, not that (#31).
      await sendsFinalized(base, auth, v.WALLET ?? '');
      // What the idle gateway's own workers cost its event loop (leases, pollers): part of every figure
      // below, the bare route has none.
      const idleBefore = mainThreadCpuMs(gw.child.pid);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const idleAfter = mainThreadCpuMs(gw.child.pid);
      const bodies = proofs.map((paymentProof) =>
        JSON.stringify({ walletAddress: v.SELLER_WALLET, paymentProof, expectedAmount: 0.001 }),
      );
      const [warmUp, closedPass] = [bodies.slice(0, WARM_UP), bodies.slice(WARM_UP, WARM_UP + CLOSED_LOOP)];
      const openPasses = Array.from({ length: OPEN_PASSES }, (_, i) =>
        bodies.slice(WARM_UP + CLOSED_LOOP + i * OPEN_PASS, WARM_UP + CLOSED_LOOP + (i + 1) * OPEN_PASS),
      );
      const bare: LeanTarget = { port: Number(bareServer.values.PORT), path: '/constant', headers: {} };
      const gateway: LeanTarget = {
        port: Number(v.PORT),
        path: '/payment/receive',
        headers: { authorization: `Bearer ${v.SELLER_KEY}` },
      };
      // Each measure beside its reference: the same passes, with the same bodies, answered by a route
      // that does nothing — what this machine gives any request so. Warm-up passes first (JIT).
      await closedLoop(bare, warmUp, CONNECTIONS);
      const closedFloor = await closedLoop(bare, closedPass, CONNECTIONS);
      await closedLoop(gateway, warmUp, CONNECTIONS);
      const closed = await closedLoop(gateway, closedPass, CONNECTIONS);
      const [openFloors, opens]: [LeanResult[], LeanResult[]] = [[], []];
      // The event loop's CPU per request in each pass (µs), where /proc tells it.
      const [floorCpus, gatewayCpus]: [number[], number[]] = [[], []];
      const withCpu = async (pid: number | undefined, pass: () => Promise<LeanResult>, cpus: number[]) => {
        const before = mainThreadCpuMs(pid);
        const result = await pass();
        const after = mainThreadCpuMs(pid);
        if (before !== undefined && after !== undefined) cpus.push(((after - before) * 1000) / OPEN_PASS);
        return result;
      };
      for (const pass of openPasses) {
        openFloors.push(
          await withCpu(
            bareServer.child.pid,
            () => openLoop(bare, pass, CONNECTIONS, RECEIVE_RATE),
            floorCpus,
          ),
        );
        opens.push(
          await withCpu(gw.child.pid, () => openLoop(gateway, pass, CONNECTIONS, RECEIVE_RATE), gatewayCpus),
        );
      }
      for (const result of [closed, ...opens]) {
        if (result.failed > 0) throw new Error(`${result.failed} receives failed in a measured pass`);
      }
      const median = (values: number[]) =>
        [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
      const p99s = opens.map((r) => r.p99Ms);
      const open = { p50Ms: median(opens.map((r) => r.p50Ms)), p99Ms: median(p99s) };
      const openFloor = {
        p50Ms: median(openFloors.map((r) => r.p50Ms)),
        p99Ms: median(openFloors.map((r) => r.p99Ms)),
      };
      rows.push({
        name: 'receive verifications (closed loop, 100 connections)',
        value: Math.round(closed.perSecond),
        unit: 'req/s',
        reference: { name: 'bare Fastify POST', value: Math.round(closedFloor.perSecond) },
      });
      rows.push({
        name: 'receive p99 (closed loop, 100 connections)',
        value: closed.p99Ms,
        unit: 'ms',
        reference: { name: 'bare Fastify POST', value: closedFloor.p99Ms },
      });
      rows.push({
        name: `receive p50 (${RECEIVE_RATE.toLocaleString('en-US')}/s over 100 connections, median of ${OPEN_PASSES})`,
        value: open.p50Ms,
        unit: 'ms',
        reference: { name: 'bare Fastify POST', value: openFloor.p50Ms },
      });
      rows.push({
        name: `receive p99 (${RECEIVE_RATE.toLocaleString('en-US')}/s over 100 connections; passes ${p99s.join(', ')} ms)`,
        value: open.p99Ms,
        unit: 'ms',
        reference: { name: 'bare Fastify POST', value: openFloor.p99Ms },
        target: '<= 20 ms',
        met: open.p99Ms <= 20,
      });
      if (idleBefore !== undefined && idleAfter !== undefined) {
        rows.push({
          name: `idle gateway, 2 s without a request: event-loop thread CPU per 1/${RECEIVE_RATE.toLocaleString('en-US')} s (its share of each receive at ${RECEIVE_RATE.toLocaleString('en-US')}/s)`,
          value: Math.round(((idleAfter - idleBefore) * 1000) / 2 / RECEIVE_RATE),
          unit: 'µs',
        });
      }
      if (gatewayCpus.length === OPEN_PASSES && floorCpus.length === OPEN_PASSES) {
        // The headroom the p99 depends on: at 1,000/s, 500 µs a receive keeps the event loop half busy.
        rows.push({
          name: `receive: event-loop thread CPU per request (${RECEIVE_RATE.toLocaleString('en-US')}/s, median of ${OPEN_PASSES})`,
          value: Math.round(median(gatewayCpus)),
          unit: 'µs',
          reference: { name: 'bare Fastify POST', value: Math.round(median(floorCpus)) },
        });
      }
    });
  } finally {
    bareServer.child.kill('SIGTERM');
    gw.child.kill('SIGTERM');
  }
  return rows;
};

/** A part that fails is reported and skipped, so the figures of the other parts still print. */
/** Requests measured one after another (after 10 unmeasured), p50 and p99 of their answer times. */
async function sequentialLatency(
  url: string,
  headers: Record<string, string>,
  count: number,
): Promise<{ p50Ms: number; p99Ms: number }> {
  const times: number[] = [];
  for (let i = 0; i < count + 10; i++) {
    const started = performance.now();
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${url} answered ${res.status}`);
    if (i >= 10) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
  return { p50Ms: at(0.5), p99Ms: at(0.99) };
}

async function section(name: string, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    process.stderr.write(
      `payments benchmark, ${name}: ${error instanceof Error ? error.message : String(error)}\n`,
    );
  }
}

export async function sendLoad(
  base: string,
  auth: Record<string, string>,
  v: Record<string, string>,
  proofs: string[],
  seconds = SECONDS,
) {
  let confirmed = 0;
  const body = JSON.stringify({ walletAddress: v.WALLET, recipientAddress: v.SELLER_WALLET, amount: 0.001 });
  const result = await autocannon({
    url: `${base}/payment/send`,
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body,
    connections: 300,
    duration: seconds,
    requests: [
      {
        onResponse: (status: number, responseBody: string) => {
          if (status !== 200) return;
          const answer = JSON.parse(responseBody) as { status: string; paymentProof: string };
          if (answer.status === 'confirmed') confirmed++;
          proofs.push(answer.paymentProof);
        },
      },
    ],
  });
  return { confirmedPerSecond: confirmed / seconds, p99Ms: result.latency.p99 };
}

/** Waits (at most 2 minutes) until none of the wallet's newest payments is still only confirmed. */
export async function sendsFinalized(
  base: string,
  auth: Record<string, string>,
  wallet: string,
): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const res = await fetch(`${base}/payment/history/${wallet}?limit=100`, { headers: auth });
    const page = (await res.json()) as { payments: { status: string }[] };
    if (!page.payments.some((p) => p.status === 'confirmed')) return;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

/** Waits until the wallet's newest payments are all settled and no new one appeared for a second. */
export async function sendsSettled(
  base: string,
  auth: Record<string, string>,
  wallet: string,
): Promise<void> {
  const deadline = Date.now() + 60_000;
  let lastTotal = -1;
  while (Date.now() < deadline) {
    const res = await fetch(`${base}/payment/history/${wallet}?limit=100`, { headers: auth });
    const page = (await res.json()) as { total: number; payments: { status: string }[] };
    const open = page.payments.some((p) => p.status === 'pending' || p.status === 'submitted');
    if (!open && page.total === lastTotal) return;
    lastTotal = page.total;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

export default paymentsBenchmark;
