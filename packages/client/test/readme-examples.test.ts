import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { Gate402Client } from '../src/index.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';

/** The README's examples, by the file name on their first line (`// buyer.ts`). */
function readmeExamples(): Map<string, string> {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const examples = new Map<string, string>();
  for (const [, code = ''] of readme.matchAll(/```ts\n([\s\S]*?)```/g)) {
    const name = /^\/\/ ([\w-]+\.ts)\n/.exec(code)?.[1];
    assert.ok(name, `a README example without its file name on the first line:\n${code.slice(0, 80)}`);
    examples.set(name, code);
  }
  return examples;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Each example is saved as the README says and run with `tsx`, against a real gateway, from a folder
 * inside this package so that `@gate402/client`, express, fastify and hono resolve as in a user's project.
 */
describe('README examples run as written', () => {
  const examples = readmeExamples();
  const dir = join(new URL('..', import.meta.url).pathname, `.readme-examples-${process.pid}`);
  let gateway: InProcessGateway;
  let env: NodeJS.ProcessEnv;
  const children: ChildProcess[] = [];

  before(async () => {
    gateway = await startGateway();
    env = { ...process.env, GATE402_URL: gateway.url, GATE402_API_KEY: await gateway.newApiKey() };
    mkdirSync(dir, { recursive: true });
    for (const [name, code] of examples) writeFileSync(join(dir, name), code);
  });
  after(async () => {
    for (const child of children) child.kill();
    rmSync(dir, { recursive: true, force: true });
    await gateway?.close();
  });

  function start(name: string, extra: NodeJS.ProcessEnv = {}): ChildProcess & { output: () => string } {
    const child = spawn(
      process.execPath,
      ['--conditions=@gate402/source', '--import', 'tsx', join(dir, name)],
      {
        cwd: dir,
        env: { ...env, ...extra },
      },
    );
    children.push(child);
    let output = '';
    child.stdout?.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      output += chunk;
    });
    return Object.assign(child, { output: () => output });
  }

  async function run(name: string, extra: NodeJS.ProcessEnv = {}): Promise<string> {
    const child = start(name, extra);
    const code = await new Promise((resolve) => child.once('exit', resolve));
    assert.equal(code, 0, `${name} exited with ${code}:\n${child.output()}`);
    return child.output();
  }

  it('names the examples the README promises', () => {
    assert.deepEqual([...examples.keys()].sort(), [
      'buyer.ts',
      'sdk.ts',
      'seller-express.ts',
      'seller-fastify.ts',
      'seller-hono.ts',
      'seller-revoke.ts',
    ]);
  });

  it('sdk.ts: pays, looks the payment up, and catches a refusal by its code', async () => {
    const output = await run('sdk.ts');
    assert.match(output, /^sent confirmed 0\.01 SOL$/m);
    assert.match(output, /^status (confirmed|finalized) true$/m);
    assert.match(output, /^refused INVALID_PARAMETERS \{ amount: 'must be between 0\.001 and 100' \}$/m);
  });

  it('seller-revoke.ts: grants on the payment, revokes on a signed payment.reverted, refuses a forged one', async () => {
    const port = await freePort();
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const server = start('seller-revoke.ts', { PORT: String(port), GATE402_WEBHOOK_SECRET: secret });
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (server.output().includes('listening on')) resolve();
        else if (server.exitCode !== null) reject(new Error(`seller-revoke.ts stopped:\n${server.output()}`));
        else setTimeout(check, 50);
      };
      check();
    });
    const url = `http://localhost:${port}/report`;
    const output = await run('buyer.ts', { RESOURCE_URL: url });
    assert.match(output, /^200 \{"report":"the numbers","paymentId":"[\w-]+"\}$/m, output);

    const deliver = (key: string, id: string) => {
      const body = JSON.stringify({ id, type: 'payment.reverted', data: { paymentId: 'pay_x' } });
      const at = new Date();
      return fetch(`http://localhost:${port}/gate402-events`, {
        method: 'POST',
        headers: {
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': new Webhook(key).sign(id, at, body),
        },
        body,
      });
    };
    const forged = await deliver(`whsec_${randomBytes(32).toString('base64')}`, 'evt_forged');
    assert.equal(forged.status, 400);
    assert.equal((await deliver(secret, 'evt_1')).status, 204);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.match(server.output(), /^payment\.reverted pay_x$/m);
    server.kill();
  });

  for (const seller of ['seller-express.ts', 'seller-fastify.ts', 'seller-hono.ts']) {
    it(`${seller} + buyer.ts: the buyer pays the seller's 402 and gets the forecast`, async () => {
      const port = await freePort();
      const server = start(seller, { PORT: String(port) });
      await new Promise<void>((resolve, reject) => {
        const check = () => {
          if (server.output().includes('listening on')) resolve();
          else if (server.exitCode !== null) reject(new Error(`${seller} stopped:\n${server.output()}`));
          else setTimeout(check, 50);
        };
        check();
      });
      const url = `http://localhost:${port}/weather`;
      assert.equal((await fetch(url)).status, 402);

      const output = await run('buyer.ts', { RESOURCE_URL: url });
      const [, payer] = /^200 \{"forecast":"sunny","paidBy":"(\w+)"\}$/m.exec(output) ?? [];
      assert.ok(payer, output);
      const [, transaction] = /^paid in (\w+)$/m.exec(output) ?? [];
      assert.ok(transaction, output);
      const history = await new Gate402Client({
        url: gateway.url,
        apiKey: env.GATE402_API_KEY,
      }).paymentHistory(payer);
      assert.deepEqual(
        history.payments.map((p) => [p.type, p.amount, p.signature, p.resource]),
        [['sent', 0.01, transaction, url]],
      );
      server.kill();
    });
  }
});
