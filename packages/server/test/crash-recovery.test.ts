import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Localnet, startLocalnet } from '@gate402/localnet';
import { localnetAdapter } from '../src/chains/solana/connect-solana.ts';
import type { SolanaAdapter } from '../src/chains/solana/solana-adapter.ts';
import { generateSolanaKeypair } from '../src/chains/solana/solana-keypair.ts';
import { tempDir } from './support/databases.ts';

const BIN = fileURLToPath(new URL('../bin/gate402.js', import.meta.url));
const SENDS = 20;
const LAMPORTS = 1_000_000_000n;

/**
 * Exactly once across crashes: a stream of sends, each retried by its client with the same
 * Idempotency-Key, while the gateway is SIGKILLed at random moments and restarted. The chain runs
 * outside the gateway (as a real cluster does), so it keeps going while the gateway is down.
 */
describe('crash recovery: SIGKILL during a stream of sends', () => {
  let localnet: Localnet;
  let chain: SolanaAdapter;
  let dir: ReturnType<typeof tempDir>;
  let env: NodeJS.ProcessEnv;
  let server: ChildProcess | undefined;
  let url: string;

  before(async () => {
    localnet = await startLocalnet({ port: 0, slotMs: 50, finalizedDepth: 32 });
    chain = localnetAdapter(localnet);
    dir = tempDir();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const { DATABASE_URL: _d, REDIS_URL: _r, ...rest } = process.env;
    env = {
      ...rest,
      DATA_DIR: dir.path,
      PORT: String(port),
      SOLANA_RPC_URL: localnet.rpcUrl,
      SOLANA_WS_URL: localnet.wsUrl,
      ANVIL_PORT: '0',
      GATE402_MASTER_KEY: 'a'.repeat(64),
      GATE402_DEMO: 'false',
      LOG_LEVEL: 'warn',
      RECONCILE_INTERVAL_MS: '200',
      PAYMENT_CONFIRM_TIMEOUT_MS: '3000',
    };
  });
  after(async () => {
    server?.kill('SIGKILL');
    await chain.close();
    await localnet.close();
    dir.dispose();
  });

  async function start(): Promise<void> {
    const child = spawn(process.execPath, [BIN, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    server = child;
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

  function kill(): Promise<void> {
    const child = server;
    server = undefined;
    if (child === undefined || child.exitCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  it('loses no payment, pays none twice, and settles every one to the lamport', {
    timeout: 240_000,
  }, async () => {
    const cli = (args: string[]) => {
      const run = spawnSync(process.execPath, [BIN, ...args, '--json'], { env, encoding: 'utf8' });
      assert.equal(run.status, 0, run.stderr);
      return JSON.parse(run.stdout);
    };
    const account = cli([
      'accounts',
      'create',
      '--name',
      'crash',
      '--plan',
      'enterprise',
      '--rate-limit',
      '100000',
    ]);
    const { key } = cli(['keys', 'create', '--account', account.id]);
    const { address: wallet } = cli(['wallets', 'create', '--account', account.id, '--chain', 'solana']);
    const recipient = generateSolanaKeypair().address;
    localnet.airdrop(wallet, 100n * LAMPORTS);
    await waitFor(async () => (await chain.getBalance(wallet)) === 100n * LAMPORTS);
    const initial = await chain.getBalance(wallet);
    await start();

    // The client: the same Idempotency-Key on every attempt, retrying through outages.
    const pay = async (i: number): Promise<{ paymentId: string }> => {
      const deadline = Date.now() + 150_000;
      for (;;) {
        try {
          const res = await fetch(`${url}/payment/send`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${key}`,
              'content-type': 'application/json',
              'idempotency-key': `crash-${i}`,
            },
            body: JSON.stringify({
              walletAddress: wallet,
              recipientAddress: recipient,
              amount: (i + 1) / 1000,
            }),
          });
          if (res.status === 200) return (await res.json()) as { paymentId: string };
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
        await kill();
        await sleep(100);
        await start();
      }
    })();
    const answers: { paymentId: string }[] = [];
    for (let i = 0; i < SENDS; i += 4) {
      answers.push(...(await Promise.all([i, i + 1, i + 2, i + 3].filter((n) => n < SENDS).map(pay))));
    }
    done = true;
    await killer;
    if (server === undefined) await start();

    const ids = answers.map((a) => a.paymentId);
    assert.equal(new Set(ids).size, SENDS, 'one payment per idempotency key');

    // Every payment settles: the reconciler finishes what the killed processes left open.
    const final = new Map<string, { status: string; signature: string; amount: number }>();
    await waitFor(async () => {
      for (const id of ids) {
        const res = await fetch(`${url}/payment/status/${id}`, {
          headers: { authorization: `Bearer ${key}` },
        });
        const body = (await res.json()) as { status: string; signature: string; amount: number };
        if (['confirmed', 'finalized', 'expired', 'failed'].includes(body.status)) final.set(id, body);
      }
      return final.size === SENDS;
    }, 120_000);

    const history = await fetch(`${url}/payment/history/${wallet}?limit=500`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(((await history.json()) as { total: number }).total, SENDS, 'no payment recorded twice');

    const landed = [...final.values()].filter((p) => p.status === 'confirmed' || p.status === 'finalized');
    assert.ok(landed.length > 0);
    for (const p of final.values()) assert.notEqual(p.status, 'failed');
    let paid = 0n;
    let fees = 0n;
    for (const p of landed) {
      const tx = await chain.getTransaction(p.signature);
      assert.ok(tx, `landed payment ${p.signature} is on chain`);
      paid += BigInt(Math.round(p.amount * 1000)) * 1_000_000n;
      fees += tx.fee;
    }
    assert.equal(
      await chain.getBalance(recipient),
      paid,
      'the recipient got each landed payment exactly once',
    );
    assert.equal(
      await chain.getBalance(wallet),
      initial - paid - fees,
      'the sender paid amounts and fees, nothing more',
    );
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(200);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function freePort(): Promise<number> {
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
