import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { type Localnet, startLocalnet } from '@gate402/localnet';
import { Redis } from 'ioredis';
import pg from 'pg';
import { localnetAdapter } from '../../../src/chains/solana/connect-solana.ts';
import type { SolanaAdapter } from '../../../src/chains/solana/solana-adapter.ts';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import {
  CrashableGateway,
  cliWallet,
  type SentPayment,
  settledOnce,
  sleep,
  waitFor,
} from '../../support/crash-harness.ts';
import {
  DATABASE_URL,
  REDIS_URL,
  SKIP_POSTGRES,
  SKIP_REDIS,
  type TempStorage,
  tempDir,
  tempPostgres,
} from '../../support/databases.ts';
import { type FaultProxy, startFaultProxy } from '../../support/fault-proxy.ts';

const LAMPORTS = 1_000_000_000n;
/** Each send pays the seller this much, so the seller's balance on chain counts the sends that landed. */
const AMOUNT_SOL = 0.01;
const AMOUNT = 10_000_000n;

/**
 * Issue 32: storage (and Redis) connections cut or stalled under a `gate402 serve` process on the
 * embedded localnet. The process must not exit; a request during the fault answers 503
 * SERVICE_UNAVAILABLE with retryAfter or succeeds; it recovers by itself within seconds; and no payment
 * is lost, recorded twice or left open — the store's records are checked against the chain.
 */

interface Answer {
  readonly status: number;
  readonly body: { error?: { code?: string; retryAfter?: number } } & Record<string, unknown>;
  readonly retryAfterHeader: string | null;
  readonly ms: number;
}

/** Every answer that was neither 200 nor a retryable refusal (503 with retryAfter, 409 key in use). */
function unexpected(answers: readonly Answer[]): Answer[] {
  return answers.filter((a) => {
    if (a.status === 200) return false;
    if (a.status === 503) return a.body.error?.code !== 'SERVICE_UNAVAILABLE' || !retryable(a);
    if (a.status === 409) return a.body.error?.code !== 'IDEMPOTENCY_KEY_IN_USE' || !retryable(a);
    return true;
  });
}

function retryable(a: Answer): boolean {
  return typeof a.body.error?.retryAfter === 'number' && a.retryAfterHeader !== null;
}

async function call(url: string, key: string, init: { body?: unknown; idempotencyKey?: string } = {}) {
  const started = performance.now();
  const res = await fetch(url, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(init.idempotencyKey === undefined ? {} : { 'idempotency-key': init.idempotencyKey }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await res.text();
  let body: Answer['body'];
  try {
    body = JSON.parse(text) as Answer['body'];
  } catch {
    body = { raw: text };
  }
  return {
    status: res.status,
    body,
    retryAfterHeader: res.headers.get('retry-after'),
    ms: performance.now() - started,
  };
}

/** A caller that retries with its Idempotency-Key until 200, as the 503 asks; every answer is kept. */
async function untilOk(send: () => Promise<Answer>, answers: Answer[], deadlineMs = 90_000): Promise<Answer> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const answer = await send().catch(
      (error: unknown): Answer => ({
        status: 0,
        body: { raw: String(error) },
        retryAfterHeader: null,
        ms: 0,
      }),
    );
    answers.push(answer);
    if (answer.status === 200) return answer;
    if (answer.status !== 503 && answer.status !== 409) {
      throw new Error(`unexpected answer ${answer.status}: ${JSON.stringify(answer.body)}`);
    }
    if (Date.now() > deadline) throw new Error('no success before the deadline');
    await sleep(200);
  }
}

/** The localnet, a schema, and one gateway process on it; `databaseUrl` may point through a proxy. */
interface Setup {
  readonly localnet: Localnet;
  readonly chain: SolanaAdapter;
  readonly gateway: CrashableGateway;
  /**
   * The same settings on the direct DATABASE_URL, for the CLI: it runs synchronously (spawnSync), so
   * while it runs this process's proxy forwards nothing.
   */
  readonly cli: CrashableGateway;
  readonly applicationName: string;
  dispose(): Promise<void>;
}

async function setUp(settings: NodeJS.ProcessEnv, through?: (url: URL) => URL): Promise<Setup> {
  const localnet = await startLocalnet({ port: 0, slotMs: 50, finalizedDepth: 32 });
  const chain = localnetAdapter(localnet);
  const storage: TempStorage = await tempPostgres();
  const dir = tempDir();
  // Our own name in pg_stat_activity: backends are terminated by it (and the test database), never others'.
  const applicationName = `gate402-test-${randomBytes(4).toString('hex')}`;
  let url = new URL(DATABASE_URL ?? '');
  if (storage.location.kind === 'postgres' && storage.location.schema !== undefined) {
    url.searchParams.set('options', `-c search_path=${storage.location.schema}`);
  }
  url.searchParams.set('application_name', applicationName);
  const shared = {
    SOLANA_RPC_URL: localnet.rpcUrl,
    SOLANA_WS_URL: localnet.wsUrl,
    ANVIL_PORT: '0',
    ...settings,
  };
  const cli = await CrashableGateway.create(dir.path, { DATABASE_URL: url.toString(), ...shared });
  if (through !== undefined) url = through(new URL(url));
  const gateway = await CrashableGateway.create(dir.path, { DATABASE_URL: url.toString(), ...shared });
  return {
    localnet,
    chain,
    gateway,
    cli,
    applicationName,
    dispose: async () => {
      await gateway.dispose();
      await chain.close();
      await localnet.close();
      await storage.dispose();
      dir.dispose();
    },
  };
}

/** Terminates the backends of this test's gateway only: its database and its application_name. */
async function terminateOwnBackends(applicationName: string): Promise<number> {
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ terminated: boolean }>(
      `select pg_terminate_backend(pid) as terminated from pg_stat_activity
        where datname = current_database() and application_name = $1 and pid <> pg_backend_pid()`,
      [applicationName],
    );
    return rows.filter((r) => r.terminated).length;
  } finally {
    await admin.end();
  }
}

/** A payer and a seller (custodial wallets of two accounts), the payer funded with 10 SOL. */
async function parties(s: Setup) {
  const payer = cliWallet(s.cli, 'payer', 'solana');
  const seller = cliWallet(s.cli, 'seller', 'solana');
  s.localnet.airdrop(payer.wallet, 10n * LAMPORTS);
  await waitFor(async () => (await s.chain.getBalance(payer.wallet)) === 10n * LAMPORTS);
  return { payer, seller };
}

/** A send from the payer to the seller and the seller's receive of its proof, each retried with its key. */
async function payAndReceive(
  s: Setup,
  payer: { key: string; wallet: string },
  seller: { key: string; wallet: string },
  i: number,
  answers: Answer[],
): Promise<{ sent: SentPayment; received: { paymentId: string } }> {
  const sent = await untilOk(
    () =>
      call(`${s.gateway.url}/payment/send`, payer.key, {
        body: { walletAddress: payer.wallet, recipientAddress: seller.wallet, amount: AMOUNT_SOL },
        idempotencyKey: `send-${i}`,
      }),
    answers,
  );
  const proof = (sent.body as { paymentProof: string }).paymentProof;
  const received = await untilOk(
    () =>
      call(`${s.gateway.url}/payment/receive`, seller.key, {
        body: { walletAddress: seller.wallet, paymentProof: proof, expectedAmount: AMOUNT_SOL },
        idempotencyKey: `receive-${i}`,
      }),
    answers,
  );
  return {
    sent: sent.body as unknown as SentPayment,
    received: received.body as unknown as { paymentId: string },
  };
}

/**
 * What must hold after the faults, store against chain: every send recorded once and settled (none
 * left pending or submitted), every receive recorded once, and the seller's balance on chain exactly
 * the sends that landed — none lost, none paid twice.
 */
async function booksMatchChain(
  s: Setup,
  payer: { key: string; wallet: string },
  seller: { key: string; wallet: string },
  results: readonly { sent: SentPayment; received: { paymentId: string } }[],
): Promise<void> {
  const final = await settledOnce(
    s.gateway,
    payer.key,
    payer.wallet,
    results.map((r) => r.sent),
  );
  const confirmed = [...final.values()].filter((p) => p.status === 'confirmed' || p.status === 'finalized');
  // A proof is given only for a send that is on its way, and its receive checked it on chain.
  assert.equal(confirmed.length, results.length, JSON.stringify([...final.values()].map((p) => p.status)));
  const receivedIds = new Set(results.map((r) => r.received.paymentId));
  assert.equal(receivedIds.size, results.length, 'one received payment per proof');
  const history = await s.gateway.get<{ total: number }>(
    seller.key,
    `/payment/history/${seller.wallet}?type=received`,
  );
  assert.equal(history.total, results.length, 'no receive recorded twice');
  assert.equal(
    await s.chain.getBalance(seller.wallet),
    AMOUNT * BigInt(results.length),
    'seller balance on chain',
  );
}

describe('PostgreSQL connections terminated under a gateway process', { skip: SKIP_POSTGRES }, () => {
  let s: Setup | undefined;
  after(async () => s?.dispose());

  it('pg_terminate_backend mid-workload: no exit, 503 with retryAfter or success, recovery, books match the chain', {
    timeout: 240_000,
  }, async (t) => {
    s = await setUp({ PAYMENT_CONFIRM_TIMEOUT_MS: '5000' });
    await s.gateway.start();
    const { payer, seller } = await parties(s);
    const answers: Answer[] = [];

    let done = false;
    let terminated = 0;
    const setup = s;
    // Cuts every connection of the gateway again and again while payments are sent and received.
    const cutter = (async () => {
      for (let round = 0; round < 8 && !done; round++) {
        await sleep(300 + Math.random() * 500);
        terminated += await terminateOwnBackends(setup.applicationName);
        assert.ok(setup.gateway.alive, `the gateway exited after cut ${round + 1}`);
      }
    })();
    const results: { sent: SentPayment; received: { paymentId: string } }[] = [];
    try {
      for (let i = 0; i < 24; i += 4) {
        const batch = [i, i + 1, i + 2, i + 3];
        results.push(
          ...(await Promise.all(batch.map((n) => payAndReceive(setup, payer, seller, n, answers)))),
        );
      }
    } finally {
      done = true;
      await cutter;
    }
    assert.ok(terminated >= 4, `${terminated} backends terminated`);
    const counted = (status: number) => answers.filter((a) => a.status === status).length;
    t.diagnostic(
      `${terminated} backends terminated; answers: ${counted(200)} × 200, ${counted(503)} × 503, ${counted(409)} × 409`,
    );
    assert.ok(s.gateway.alive, 'the gateway process is still running');
    assert.deepEqual(unexpected(answers), [], 'only 200, or 503/409 with retryAfter');

    // Recovery by itself after one more cut: a connection cut while idle fails the request that meets
    // it before its 'error' arrives (503), and is replaced; /readyz is ready again within seconds.
    await terminateOwnBackends(s.applicationName);
    const cut = Date.now();
    await waitFor(async () => (await fetch(`${setup.gateway.url}/readyz`)).status === 200, 5_000, 50);
    t.diagnostic(`ready ${Date.now() - cut} ms after the last cut`);
    await booksMatchChain(s, payer, seller, results);
    assert.ok(s.gateway.alive, 'the gateway process is still running');
  });
});

describe('PostgreSQL behind a proxy that drops, delays and black-holes', { skip: SKIP_POSTGRES }, () => {
  let s: Setup | undefined;
  let proxy: FaultProxy | undefined;
  after(async () => {
    await s?.dispose();
    await proxy?.close();
  });

  const CONNECT_MS = 1_000;
  const STATEMENT_MS = 1_500;
  /** The statement limit, the grace before a silent connection is given up, and slack for a busy machine. */
  const ANSWER_WITHIN_MS = STATEMENT_MS + 1_000 + 1_500;

  it('answers 503 with retryAfter within the time limit, /readyz names storage, and recovers', {
    timeout: 240_000,
  }, async () => {
    const target = new URL(DATABASE_URL ?? '');
    proxy = await startFaultProxy(`http://${target.hostname}:${target.port || '5432'}`);
    const port = proxy.port;
    s = await setUp(
      {
        DATABASE_CONNECT_TIMEOUT_MS: String(CONNECT_MS),
        DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_MS),
        // Every request asks storage for its key, so each one meets the fault.
        AUTH_CACHE_MS: '0',
        PAYMENT_CONFIRM_TIMEOUT_MS: '5000',
      },
      (url) => {
        url.host = `127.0.0.1:${port}`;
        return url;
      },
    );
    await s.gateway.start();
    const { payer, seller } = await parties(s);
    const answers: Answer[] = [];
    const results = [await payAndReceive(s, payer, seller, 0, answers)];
    const statusOf = () => call(`${s?.gateway.url}/payment/status/${results[0]?.sent.paymentId}`, payer.key);

    for (const fault of [{ kind: 'blackhole' }, { kind: 'drop' }, { kind: 'delay', ms: 4_000 }] as const) {
      proxy.set(fault);
      // A send in flight through the fault: it fails 503 or succeeds later with its key, never twice.
      const inFlight = payAndReceive(s, payer, seller, results.length, answers);
      for (let i = 0; i < 3; i++) {
        const answer = await statusOf();
        assert.equal(answer.status, 503, `${fault.kind}: ${JSON.stringify(answer.body)}`);
        assert.equal(answer.body.error?.code, 'SERVICE_UNAVAILABLE');
        assert.ok(retryable(answer), `${fault.kind}: retryAfter and Retry-After`);
        assert.ok(answer.ms < ANSWER_WITHIN_MS, `${fault.kind}: answered after ${Math.round(answer.ms)} ms`);
      }
      const ready = await fetch(`${s.gateway.url}/readyz`);
      const readiness = (await ready.json()) as { checks: Record<string, { ok: boolean }> };
      assert.equal(ready.status, 503, fault.kind);
      assert.equal(readiness.checks.storage?.ok, false, fault.kind);
      assert.ok(s.gateway.alive, `${fault.kind}: the gateway is still running`);

      proxy.set({ kind: 'pass' });
      // Recovers by itself: a fresh connection at the next request, within seconds.
      const healed = Date.now();
      await waitFor(async () => (await statusOf()).status === 200, 15_000, 100);
      assert.ok(Date.now() - healed < 10_000, `${fault.kind}: recovered after ${Date.now() - healed} ms`);
      await waitFor(async () => (await fetch(`${s?.gateway.url}/readyz`)).status === 200, 10_000, 100);
      results.push(await inFlight);
    }
    assert.ok(s.gateway.alive, 'the gateway process is still running');
    assert.deepEqual(unexpected(answers), [], 'only 200, or 503/409 with retryAfter');
    await booksMatchChain(s, payer, seller, results);
  });
});

describe('Redis connections killed under a gateway process', { skip: SKIP_REDIS }, () => {
  let s:
    | { localnet: Localnet; chain: SolanaAdapter; gateway: CrashableGateway; dispose(): Promise<void> }
    | undefined;
  after(async () => s?.dispose());

  /** Kills the Redis client connections of one gateway process only, found by their names (gate402:<pid>:…). */
  async function killOwnConnections(pid: number): Promise<number> {
    const redis = new Redis(REDIS_URL ?? '');
    try {
      const list = (await redis.client('LIST')) as string;
      const ids = list
        .split('\n')
        .filter((line) => line.includes(` name=gate402:${pid}:`))
        .map((line) => /(?:^|\s)id=(\d+)/.exec(line)?.[1])
        .filter((id): id is string => id !== undefined);
      for (const id of ids) await redis.client('KILL', 'ID', id);
      return ids.length;
    } finally {
      redis.disconnect();
    }
  }

  it('CLIENT KILL mid-workload: no exit, 503 with retryAfter or success, recovery', {
    timeout: 180_000,
  }, async () => {
    const localnet = await startLocalnet({ port: 0, slotMs: 50, finalizedDepth: 32 });
    const chain = localnetAdapter(localnet);
    const dir = tempDir();
    // SQLite storage: only Redis is cut here.
    const gateway = await CrashableGateway.create(dir.path, {
      REDIS_URL: REDIS_URL ?? '',
      SOLANA_RPC_URL: localnet.rpcUrl,
      SOLANA_WS_URL: localnet.wsUrl,
      ANVIL_PORT: '0',
    });
    s = {
      localnet,
      chain,
      gateway,
      dispose: async () => {
        await gateway.dispose();
        await chain.close();
        await localnet.close();
        dir.dispose();
      },
    };
    await gateway.start();
    const pid = gateway.pid ?? 0;
    const payer = cliWallet(gateway, 'payer', 'solana');
    localnet.airdrop(payer.wallet, 10n * LAMPORTS);
    await waitFor(async () => (await chain.getBalance(payer.wallet)) === 10n * LAMPORTS);
    const recipient = generateSolanaKeypair().address;

    const answers: Answer[] = [];
    let done = false;
    let killed = 0;
    const killer = (async () => {
      for (let round = 0; round < 6 && !done; round++) {
        await sleep(200 + Math.random() * 400);
        killed += await killOwnConnections(pid);
        assert.ok(gateway.alive, `the gateway exited after kill ${round + 1}`);
      }
    })();
    const sent: SentPayment[] = [];
    try {
      for (let i = 0; i < 16; i += 4) {
        sent.push(
          ...(await Promise.all(
            [i, i + 1, i + 2, i + 3].map(async (n) => {
              const answer = await untilOk(
                () =>
                  call(`${gateway.url}/payment/send`, payer.key, {
                    body: {
                      walletAddress: payer.wallet,
                      recipientAddress: recipient,
                      amount: AMOUNT_SOL,
                    },
                    idempotencyKey: `redis-${n}`,
                  }),
                answers,
              );
              return answer.body as unknown as SentPayment;
            }),
          )),
        );
      }
    } finally {
      done = true;
      await killer;
    }
    assert.ok(killed >= 3, `${killed} connections killed`);
    assert.ok(gateway.alive, 'the gateway process is still running');
    assert.deepEqual(unexpected(answers), [], 'only 200, or 503/409 with retryAfter');
    // Redis is back for this instance: its rate limiter answers (a request passes) and /readyz is ready.
    await waitFor(async () => (await fetch(`${gateway.url}/readyz`)).status === 200, 10_000, 100);
    const final = await settledOnce(gateway, payer.key, payer.wallet, sent);
    assert.ok([...final.values()].every((p) => p.status === 'confirmed' || p.status === 'finalized'));
    assert.equal(await chain.getBalance(recipient), AMOUNT * BigInt(sent.length));
    const redis = new Redis(REDIS_URL ?? '');
    const names = ((await redis.client('LIST')) as string)
      .split('\n')
      .filter((line) => line.includes(` name=gate402:${pid}:`));
    redis.disconnect();
    assert.equal(names.length, 3, 'rate limiter, publisher and subscriber connected again');
  });
});
