import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../support/databases.ts';
import { GATE402_COMMAND } from '../support/gate402-command.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** The README's walkthrough, the shell block under its heading, exactly as a reader copies it. */
function walkthrough(): string {
  const readme = readFileSync(`${ROOT}README.md`, 'utf8');
  const section = readme.slice(readme.indexOf('\n## Five-minute walkthrough'));
  const start = section.indexOf('```sh\n') + '```sh\n'.length;
  return section.slice(start, section.indexOf('\n```\n', start));
}

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The environment without the CI's PostgreSQL and Redis: the walkthrough runs on the SQLite default. */
function sqliteEnv(dataDir: string): NodeJS.ProcessEnv {
  const { DATABASE_URL: _d, REDIS_URL: _r, ...inherited } = process.env;
  return { ...inherited, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
}

/** `gate402 serve` on free ports of its own, once /healthz answers. */
async function serve(dataDir: string): Promise<{ url: string; process: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.execPath, [...GATE402_COMMAND, 'serve'], {
    env: { ...sqliteEnv(dataDir), PORT: String(port), LOCALNET_PORT: '0', ANVIL_PORT: '0' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (const started = Date.now(); Date.now() - started < 60_000; ) {
    if (child.exitCode !== null) throw new Error(`gate402 serve exited with ${child.exitCode}`);
    const healthy = await fetch(`${url}/healthz`).then(
      (res) => res.ok,
      () => false,
    );
    if (healthy) return { url, process: child };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill('SIGKILL');
  throw new Error('gate402 serve did not answer /healthz within 60 s');
}

describe("the README's five-minute walkthrough", () => {
  it('runs as written against gate402 serve on the embedded chains', { timeout: 180_000 }, async () => {
    const script = walkthrough();
    // Nothing to fill in: every value comes from an earlier command (the gateway's URL aside, which the
    // test moves to a free port).
    assert.equal(script.match(/^GW=http:\/\/127\.0\.0\.1:8402$/gm)?.length, 1, script);
    // `npx gate402` runs the compiled command; the test runs the sources beside it, as every other test
    // does (the packaging test checks the compiled one), so a stale build cannot pass or fail it.
    const gate402 = [process.execPath, ...GATE402_COMMAND].map((arg) => `'${arg}'`).join(' ');
    assert.match(script, /npx gate402 /);
    const dir = tempDir();
    const gateway = await serve(dir.path);
    try {
      const ran = spawnSync(
        'bash',
        [
          '-e',
          '-o',
          'pipefail',
          '-c',
          script.replace(/^GW=.*$/m, `GW=${gateway.url}`).replaceAll('npx gate402 ', `${gate402} `),
        ],
        {
          cwd: ROOT,
          env: sqliteEnv(dir.path),
          encoding: 'utf8',
          timeout: 120_000,
        },
      );
      assert.equal(ran.status, 0, `${ran.stdout}\n${ran.stderr}`);
      const answers = ran.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      const [faucet, sent, received, status, history] = answers;
      assert.equal(answers.length, 5, ran.stdout);
      assert.equal(faucet.success, true);
      assert.equal(sent.status, 'confirmed');
      assert.match(sent.paymentProof, /^0x01/);
      assert.equal(received.verified, true);
      assert.equal(received.amountReceived, 0.1);
      assert.equal(status.paymentId, sent.paymentId);
      assert.equal(history.total, 1);
      assert.equal(history.payments[0].paymentId, received.paymentId);
    } finally {
      const exited = new Promise((resolve) => gateway.process.once('exit', resolve));
      gateway.process.kill('SIGTERM');
      await exited;
      dir.dispose();
    }
  });
});
