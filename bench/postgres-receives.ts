import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { type Localnet, startLocalnet } from '@gate402/localnet';
import pg from 'pg';
import type { Benchmark } from './bench-row.ts';
import { startServerProcess } from './http-load.ts';
import { closedLoop, type LeanResult, type LeanTarget } from './lean-load.ts';

/** Receives per measured pass, split over the instances that serve it. */
const PASS = Number(process.env.BENCH_PG_RECEIVES ?? 1_500);
const WARM_UP = 200;
const ROUNDS = 2;
/** Connections in all, split over the instances of a pass (each load-balanced client keeps its own). */
const CONNECTIONS = 100;
/** Sends in flight while the proofs are made. */
const SENDERS = 64;
/** Linux's USER_HZ: /proc's CPU times are in these ticks. */
const TICKS_PER_SECOND = 100;
const LAMPORTS = 1_000_000_000n;

/**
 * Receives (POST /payment/receive, each redeeming its own payment proof) on PostgreSQL + Redis: one
 * gateway instance, then two instances on the same schema and Redis serving the same load side by
 * side, as behind a load balancer, in paired rounds (order swapped each round). Beside each pass, from
 * /proc: the CPU per receive of each gateway process (all its threads) and of the PostgreSQL backend
 * processes serving the gateways' connections (found in pg_stat_activity by the application name each
 * instance connects with), and Redis's. Skipped with a printed reason when DATABASE_URL or REDIS_URL is
 * unset. The chain is a localnet in this process (50 ms slots: the proofs are made quickly, and
 * receiving does not ask the chain).
 */
const postgresReceivesBenchmark: Benchmark = async () => {
  const databaseUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (databaseUrl === undefined || redisUrl === undefined) {
    process.stderr.write(
      'postgres: skipped, DATABASE_URL and REDIS_URL must both be set (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379)\n',
    );
    return [];
  }
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  const children: { kill(): void }[] = [];
  let localnet: Localnet | undefined;
  try {
    localnet = await startLocalnet({ port: 0, slotMs: 50 });
    const tag = `gate402-bench-${randomBytes(3).toString('hex')}`;
    const instanceEnv = (name: string) => {
      const url = new URL(databaseUrl);
      url.searchParams.set('options', `-c search_path=${schema}`);
      url.searchParams.set('application_name', `${tag}-${name}`);
      return {
        DATABASE_URL: url.toString(),
        REDIS_URL: redisUrl,
        SOLANA_RPC_URL: localnet?.rpcUrl ?? '',
        SOLANA_WS_URL: localnet?.wsUrl ?? '',
        GATE402_MASTER_KEY: masterKey,
        // The embedded anvil each instance starts has been seen to take longer than the default 8 s to
        // answer its first calls on a loaded 2-core machine, which ended the instance's start.
        RPC_TIMEOUT_MS: '60000',
        // Likewise PostgreSQL's connections, opened by the instance's start, under the same load.
        DATABASE_CONNECT_TIMEOUT_MS: '30000',
      };
    };
    const masterKey = randomBytes(32).toString('hex');
    const a = await startWithEnv({ ...instanceEnv('a'), BENCH_SETUP: '1' }, [
      'PORT',
      'KEY',
      'WALLET',
      'SELLER_KEY',
      'SELLER_WALLET',
    ]);
    children.push(a.child);
    const b = await startWithEnv(instanceEnv('b'), ['PORT']);
    children.push(b.child);
    const v = a.values;
    localnet.airdrop(v.WALLET ?? '', 10_000n * LAMPORTS);

    const proofs = await makeProofs(
      `http://127.0.0.1:${v.PORT}`,
      v.KEY ?? '',
      v.WALLET ?? '',
      v.SELLER_WALLET ?? '',
      2 * WARM_UP + ROUNDS * 2 * PASS,
    );
    const bodies = proofs.map((paymentProof) =>
      JSON.stringify({ walletAddress: v.SELLER_WALLET, paymentProof, expectedAmount: 0.001 }),
    );
    const take = (count: number) => bodies.splice(0, count);
    const target = (port: string | undefined): LeanTarget => ({
      port: Number(port),
      path: '/payment/receive',
      headers: { authorization: `Bearer ${v.SELLER_KEY}` },
    });
    const [targetA, targetB] = [target(v.PORT), target(b.values.PORT)];
    await closedLoop(targetA, take(WARM_UP), CONNECTIONS);
    await closedLoop(targetB, take(WARM_UP), CONNECTIONS);

    const redis = redisPid();
    const measure = async (targets: LeanTarget[]): Promise<Pass> => {
      // The pools keep their connections open between passes; one opened during a pass is missed.
      const pids = {
        a: a.child.pid ?? 0,
        b: b.child.pid ?? 0,
        postgres: await backendPids(admin, tag),
        redis,
      };
      const before = cpuTicks(pids);
      const started = performance.now();
      const share = Math.floor(PASS / targets.length);
      const results = await Promise.all(
        targets.map((t) => closedLoop(t, take(share), CONNECTIONS / targets.length)),
      );
      const seconds = (performance.now() - started) / 1000;
      const after = cpuTicks(pids);
      // A receive refused under load (503 when storage is slow to answer) is counted apart, not as served.
      const failed = results.reduce((sum, r) => sum + r.failed, 0);
      const count = share * targets.length;
      const perReceive = (key: keyof typeof before) =>
        (((after[key] - before[key]) / TICKS_PER_SECOND) * 1e6) / count;
      return {
        failed,
        perSecond: (count - failed) / seconds,
        p99Ms: Math.max(...results.map((r: LeanResult) => r.p99Ms)),
        cpu: {
          a: perReceive('a'),
          b: perReceive('b'),
          postgres: perReceive('postgres'),
          redis: perReceive('redis'),
        },
      };
    };
    const ones: Pass[] = [];
    const twos: Pass[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        ones.push(await measure([targetA]));
        twos.push(await measure([targetA, targetB]));
      } else {
        twos.push(await measure([targetA, targetB]));
        ones.push(await measure([targetA]));
      }
    }
    const one = meanPass(ones);
    const two = meanPass(twos);
    const ratio = median(twos.map((t, i) => t.perSecond / (ones[i]?.perSecond ?? Number.NaN)));
    const us = (n: number) => Math.round(n);
    return [
      {
        name: `receives on PostgreSQL + Redis, ${CONNECTIONS} connections, closed loop: two instances (${ROUNDS} paired rounds of ${PASS}; refused: ${two.failed}, one instance ${one.failed})`,
        value: Math.round(two.perSecond),
        unit: 'receives/s',
        reference: { name: 'one instance', value: Math.round(one.perSecond) },
        ratio,
      },
      {
        name: 'receive p99 on PostgreSQL + Redis, two instances (closed loop: mostly queueing)',
        value: two.p99Ms,
        unit: 'ms',
        reference: { name: 'one instance', value: one.p99Ms },
      },
      {
        name: `CPU per receive, one instance: gateway ${us(one.cpu.a)} µs (all threads), PostgreSQL backends ${us(one.cpu.postgres)} µs, Redis ${us(one.cpu.redis)} µs`,
        value: us(one.cpu.a + one.cpu.postgres + one.cpu.redis),
        unit: 'µs',
      },
      {
        name: `CPU per receive, two instances: gateways ${us(two.cpu.a)} + ${us(two.cpu.b)} µs, PostgreSQL backends ${us(two.cpu.postgres)} µs, Redis ${us(two.cpu.redis)} µs`,
        value: us(two.cpu.a + two.cpu.b + two.cpu.postgres + two.cpu.redis),
        unit: 'µs',
      },
    ];
  } finally {
    for (const child of children) child.kill();
    await localnet?.close();
    await admin.query(`drop schema ${schema} cascade`).catch(() => {});
    await admin.end();
  }
};

interface Pass {
  readonly failed: number;
  readonly perSecond: number;
  readonly p99Ms: number;
  /** µs of CPU per receive: each gateway process, the PostgreSQL backends, Redis. */
  readonly cpu: { readonly a: number; readonly b: number; readonly postgres: number; readonly redis: number };
}

function meanPass(passes: Pass[]): Pass {
  const mean = (f: (p: Pass) => number) => passes.reduce((sum, p) => sum + f(p), 0) / passes.length;
  return {
    failed: passes.reduce((sum, p) => sum + p.failed, 0),
    perSecond: mean((p) => p.perSecond),
    p99Ms: median(passes.map((p) => p.p99Ms)),
    cpu: {
      a: mean((p) => p.cpu.a),
      b: mean((p) => p.cpu.b),
      postgres: mean((p) => p.cpu.postgres),
      redis: mean((p) => p.cpu.redis),
    },
  };
}

/** startServerProcess with these variables added to the child's environment. */
async function startWithEnv(env: Record<string, string>, expect: string[]) {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    return await startServerProcess(
      new URL('./servers/postgres-gateway.ts', import.meta.url).pathname,
      expect,
    );
  } finally {
    for (const name of Object.keys(env)) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  }
}

/**
 * Proofs of `count` confirmed payments from the buyer to the seller, sent through one instance,
 * SENDERS at a time; then waits until none of them is still pending.
 */
async function makeProofs(
  base: string,
  key: string,
  wallet: string,
  seller: string,
  count: number,
): Promise<string[]> {
  const proofs: string[] = [];
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const body = JSON.stringify({ walletAddress: wallet, recipientAddress: seller, amount: 0.001 });
  let refused = 0;
  const sender = async () => {
    while (proofs.length < count) {
      const res = await fetch(`${base}/payment/send`, { method: 'POST', headers, body });
      const answer = (await res.json()) as { paymentProof?: string; status?: string };
      if (res.status === 200 && answer.paymentProof !== undefined) {
        proofs.push(answer.paymentProof);
        continue;
      }
      // An overloaded machine answers some sends 503 (storage or chain slow to answer): sent again,
      // within reason, since only the proofs matter here.
      if (res.status !== 503 || ++refused > count)
        throw new Error(`a send failed (${res.status}): ${JSON.stringify(answer)}`);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  };
  await Promise.all(Array.from({ length: SENDERS }, sender));
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await fetch(`${base}/payment/history/${wallet}?limit=100`, { headers });
    const page = (await res.json()) as { payments: { status: string }[] };
    if (!page.payments.some((p) => p.status === 'pending' || p.status === 'submitted')) return proofs;
    if (Date.now() > deadline) throw new Error('sends still pending after two minutes');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** The PostgreSQL server processes serving the instances' connections (their application name starts with `tag`). */
async function backendPids(admin: pg.Client, tag: string): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>(
    'select pid from pg_stat_activity where application_name like $1',
    [`${tag}-%`],
  );
  return rows.map((r) => r.pid);
}

/** redis-server's process id, if it runs on this machine (its comm is redis-server). */
function redisPid(): number[] {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'redis-server') return [Number(entry)];
    } catch {}
  }
  return [];
}

/** utime + stime ticks of each group of processes (all their threads), from /proc/<pid>/stat. */
function cpuTicks(groups: { a: number; b: number; postgres: number[]; redis: number[] }) {
  const ticks = (pid: number) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(fields[11]) + Number(fields[12]);
    } catch {
      return 0;
    }
  };
  const sum = (pids: number[]) => pids.reduce((total, pid) => total + ticks(pid), 0);
  return { a: ticks(groups.a), b: ticks(groups.b), postgres: sum(groups.postgres), redis: sum(groups.redis) };
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? 0)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

export default postgresReceivesBenchmark;
