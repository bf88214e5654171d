import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { GATE402_COMMAND } from './gate402-command.ts';

/**
 * A gateway run as `gate402 serve` in a child process that a test can SIGKILL and start again on the
 * same DATA_DIR and port, as an operator's supervisor would. The chains run outside it (as real clusters
 * do), so they keep going while the gateway is down.
 */
export class CrashableGateway {
  private child: ChildProcess | undefined;
  /**
   * Set: `kill` also SIGKILLs the gateway's own child processes (its embedded localnet, anvil and
   * anvil's watchdog) at the same moment — a crash of the whole machine as far as the chains know.
   */
  killsChains = false;

  private constructor(
    readonly url: string,
    readonly env: NodeJS.ProcessEnv,
  ) {}

  /**
   * `settings` are the gateway's environment on top of the test's own, without DATABASE_URL and
   * REDIS_URL (SQLite in `dataDir`, rate limits in-process), on a free port, with a fixed master key.
   */
  static async create(dataDir: string, settings: NodeJS.ProcessEnv): Promise<CrashableGateway> {
    const port = await freePort();
    const { DATABASE_URL: _d, REDIS_URL: _r, ...rest } = process.env;
    return new CrashableGateway(`http://127.0.0.1:${port}`, {
      ...rest,
      DATA_DIR: dataDir,
      PORT: String(port),
      GATE402_MASTER_KEY: 'a'.repeat(64),
      GATE402_DEMO: 'false',
      LOG_LEVEL: 'warn',
      RECONCILE_INTERVAL_MS: '200',
      PAYMENT_CONFIRM_TIMEOUT_MS: '3000',
      ...settings,
    });
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Started and not exited since (a running() gateway whose process died on its own is not alive). */
  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The process id of the running gateway. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Runs a `gate402 … --json` command on the same storage and returns its JSON answer. */
  cli<T>(args: string[]): T {
    const run = spawnSync(process.execPath, [...GATE402_COMMAND, ...args, '--json'], {
      env: this.env,
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    return JSON.parse(run.stdout) as T;
  }

  /** Starts `gate402 serve` and resolves once it listens. */
  async start(): Promise<void> {
    const child = spawn(process.execPath, [...GATE402_COMMAND, 'serve'], {
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 60_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('listening on')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
    });
  }

  /**
   * The end of a test: SIGKILL the gateway and its chain processes, and wait until they are gone. A
   * gateway killed alone leaves anvil to its watchdog, which stops it with SIGTERM, and anvil then writes
   * its state into DATA_DIR while the test is removing that folder (ENOTEMPTY in CI).
   */
  async dispose(): Promise<void> {
    this.killsChains = true;
    await this.kill();
  }

  /** SIGKILL: no hook runs, nothing is flushed or drained. */
  kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null) return Promise.resolve();
    const children = this.killsChains ? childPids(child.pid as number) : [];
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    for (const pid of children) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    child.kill('SIGKILL');
    return exited.then(() => waitFor(async () => children.every((pid) => !isAlive(pid)), 10_000, 20));
  }

  /** GET with the key; the parsed body. */
  async get<T>(key: string, path: string): Promise<T> {
    const res = await fetch(`${this.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return (await res.json()) as T;
  }
}

/**
 * An operator's set-up with the CLI on the gateway's storage: an Enterprise account with `rateLimit`
 * requests a minute (by default one no run reaches) and its API key.
 */
export function cliAccount(
  gateway: CrashableGateway,
  name: string,
  rateLimit = 100_000,
): { accountId: string; key: string } {
  const account = gateway.cli<{ id: string }>([
    'accounts',
    'create',
    '--name',
    name,
    '--plan',
    'enterprise',
    '--rate-limit',
    String(rateLimit),
  ]);
  const { key } = gateway.cli<{ key: string }>(['keys', 'create', '--account', account.id]);
  return { accountId: account.id, key };
}

/** cliAccount's account and key, and a custodial wallet of `chain` in that account. */
export function cliWallet(
  gateway: CrashableGateway,
  name: string,
  chain: 'solana' | 'evm',
): { accountId: string; key: string; wallet: string } {
  const { accountId, key } = cliAccount(gateway, name);
  const { address } = gateway.cli<{ address: string }>([
    'wallets',
    'create',
    '--account',
    accountId,
    '--chain',
    chain,
  ]);
  return { accountId, key, wallet: address };
}

/**
 * What holds after a crash run on any chain: one payment per Idempotency-Key, every one settled (the
 * reconciler finishes what killed processes left open), none recorded twice. Their final status answers, by id.
 */
export async function settledOnce(
  gateway: CrashableGateway,
  key: string,
  wallet: string,
  answers: readonly SentPayment[],
): Promise<Map<string, SentPayment>> {
  const ids = answers.map((a) => a.paymentId);
  assert.equal(new Set(ids).size, answers.length, 'one payment per idempotency key');
  const final = await settledPayments(gateway, key, ids);
  const history = await gateway.get<{ total: number }>(key, `/payment/history/${wallet}?limit=500`);
  assert.equal(history.total, answers.length, 'no payment recorded twice');
  return final;
}

export interface SentPayment {
  readonly paymentId: string;
  readonly status: string;
  readonly signature: string;
  readonly amount: number;
}

/**
 * A stream of `count` sends, four at a time, each retried by its client with the same Idempotency-Key
 * through outages, while the gateway is SIGKILLed at random moments (up to five times) and restarted.
 * Resolves with one answer per send, in order (a send that expired unlanded answers 422; it is kept as
 * status `expired`); the gateway is running afterwards.
 */
export async function sendThroughCrashes(
  gateway: CrashableGateway,
  key: string,
  count: number,
  body: (i: number) => Record<string, unknown>,
): Promise<SentPayment[]> {
  const pay = async (i: number): Promise<SentPayment> => {
    const deadline = Date.now() + 150_000;
    for (;;) {
      try {
        const res = await fetch(`${gateway.url}/payment/send`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'idempotency-key': `crash-${i}`,
          },
          body: JSON.stringify(body(i)),
        });
        if (res.status === 200) return (await res.json()) as SentPayment;
        const expired = res.status === 422 ? expiredSend(await res.clone().json(), body(i)) : undefined;
        if (expired !== undefined) return expired;
        if (res.status !== 409 && res.status < 500)
          throw new Error(`send ${i}: ${res.status} ${await res.text()}`);
      } catch (error) {
        if (error instanceof Error && error.message.startsWith('send ')) throw error;
      }
      if (Date.now() > deadline) throw new Error(`send ${i} never got an answer`);
      await sleep(250);
    }
  };

  let done = false;
  const killer = (async () => {
    for (let kills = 0; kills < 5 && !done; kills++) {
      await sleep(300 + Math.random() * 900);
      await gateway.kill();
      await sleep(100);
      await gateway.start();
    }
  })();
  const answers: SentPayment[] = [];
  try {
    for (let i = 0; i < count; i += 4) {
      const batch = [i, i + 1, i + 2, i + 3].filter((n) => n < count);
      answers.push(...(await Promise.all(batch.map(pay))));
    }
  } finally {
    done = true;
    await killer;
  }
  if (!gateway.running) await gateway.start();
  return answers;
}

/**
 * The answer to a send whose transaction expired unlanded (its blockhash ran out while the gateway was
 * down): 422 PAYMENT_FAILED naming the payment, an outcome the crash tests allow; anything else undefined.
 */
function expiredSend(answer: unknown, sent: Record<string, unknown>): SentPayment | undefined {
  const error = (answer as { error?: { code?: string; details?: { paymentId?: string; status?: string } } })
    .error;
  const paymentId = error?.details?.paymentId;
  if (error?.code !== 'PAYMENT_FAILED' || error.details?.status !== 'expired' || paymentId === undefined)
    return undefined;
  return { paymentId, status: 'expired', signature: '', amount: Number(sent.amount) };
}

/** Waits until every payment is confirmed or in a final state; their status answers, by id. */
export async function settledPayments(
  gateway: CrashableGateway,
  key: string,
  ids: readonly string[],
): Promise<Map<string, SentPayment>> {
  const final = new Map<string, SentPayment>();
  await waitFor(async () => {
    for (const id of ids) {
      const body = await gateway.get<SentPayment>(key, `/payment/status/${id}`);
      // Confirmed is settled as far as money goes; finalized may take long on some chains.
      if (['confirmed', 'finalized', 'expired', 'failed'].includes(body.status)) final.set(id, body);
    }
    return final.size === ids.length;
  }, 120_000);
  return final;
}

export async function waitFor(
  check: () => Promise<boolean>,
  timeoutMs = 10_000,
  intervalMs = 200,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(intervalMs);
  }
}

/** The direct children of a process, from /proc (Linux). */
function childPids(parent: number): number[] {
  const run = spawnSync('ps', ['-o', 'pid=', '--ppid', String(parent)], { encoding: 'utf8' });
  return run.stdout
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((pid) => Number.isInteger(pid) && pid > 0);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
