import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DATABASE_URL, SKIP_POSTGRES, tempDir, tempPostgres } from '../support/databases.ts';
import { GATE402_COMMAND } from '../support/gate402-command.ts';

const REPO_ROOT = fileURLToPath(new URL('../../../..', import.meta.url));

function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  // The CLI must not see the CI's database settings unless a test asks for them.
  const { DATABASE_URL: _d, REDIS_URL: _r, ...rest } = process.env;
  // Free ports for the embedded chains, so a running `npm start` on this machine does not collide.
  return { ...rest, LOG_LEVEL: 'warn', LOCALNET_PORT: '0', ANVIL_PORT: '0', ...extra };
}

function cli(args: string[], env: Record<string, string>) {
  const run = spawnSync(process.execPath, [...GATE402_COMMAND, ...args], {
    env: baseEnv(env),
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

function cliJson(args: string[], env: Record<string, string>) {
  const run = cli([...args, '--json'], env);
  assert.equal(run.code, 0, `gate402 ${args.join(' ')} failed: ${run.stderr}${run.stdout}`);
  return JSON.parse(run.stdout);
}

/** Starts `gate402 serve` and resolves with its URL once it prints that it is listening. */
async function serve(
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, [...GATE402_COMMAND, 'serve'], {
    env: baseEnv({ PORT: '0', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/[^\s]+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
  });
  return { child, url, output: () => output };
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.on('exit', (code) => resolve(code));
    child.kill('SIGTERM');
  });
}

async function answers(rpcUrl: string, method: string): Promise<boolean> {
  try {
    const res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [] }),
      signal: AbortSignal.timeout(2_000),
    });
    return res.ok;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function getAccount(url: string, key: string) {
  const res = await fetch(`${url}/account`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('the gate402 command', () => {
  let dir: ReturnType<typeof tempDir>;
  let env: Record<string, string>;
  before(() => {
    dir = tempDir();
    env = { DATA_DIR: dir.path, GATE402_DEMO: 'false' };
  });
  after(() => dir.dispose());

  it('manages accounts and keys, and the server honours them', async () => {
    const account = cliJson(['accounts', 'create', '--name', 'Acme', '--plan', 'premium'], env);
    assert.match(account.id, /^acct_[0-9A-Z]{26}$/);
    assert.deepEqual(
      { ...account, id: 0, createdAt: 0, updatedAt: 0 },
      {
        id: 0,
        name: 'Acme',
        plan: 'premium',
        rateLimit: 1000,
        createdAt: 0,
        updatedAt: 0,
      },
    );

    const created = cliJson(['keys', 'create', '--account', account.id, '--name', 'ci'], env);
    assert.match(created.id, /^key_/);
    assert.match(created.key, /^g402_sk_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.prefix, created.key.slice(0, 12));

    const listed = cliJson(['keys', 'list', '--account', account.id], env);
    assert.equal(listed.length, 1);
    assert.equal(listed[0].id, created.id);
    assert.equal(listed[0].key, undefined, 'a list never shows the secret');
    assert.ok(!JSON.stringify(listed).includes(created.key.slice(12)));

    const upgraded = cliJson(
      ['accounts', 'set-plan', account.id, '--plan', 'enterprise', '--rate-limit', '50'],
      env,
    );
    assert.equal(upgraded.plan, 'enterprise');
    assert.equal(upgraded.rateLimit, 50);

    const server = await serve(env);
    try {
      const before = await getAccount(server.url, created.key);
      assert.equal(before.status, 200, `${JSON.stringify(before.body)}\n${server.output()}`);
      assert.equal(before.body.plan, 'enterprise');
      assert.deepEqual((before.body.rateLimit as { limit: number }).limit, 50);

      const revoked = cliJson(['keys', 'revoke', created.id], env);
      assert.equal(typeof revoked.revokedAt, 'number');
      // Another process revoked it: the server sees it within AUTH_CACHE_MS (1 s by default).
      const deadline = Date.now() + 3_000;
      let status = 200;
      while (status !== 401 && Date.now() < deadline) {
        status = (await getAccount(server.url, created.key)).status;
        if (status !== 401) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(status, 401);
    } finally {
      assert.equal(await stop(server.child), 0, 'SIGTERM shuts down cleanly');
    }
  });

  it('refuses bad input with the error body in --json mode and exit code 1', () => {
    const run = cli(['accounts', 'create', '--name', 'X', '--plan', 'gold', '--json'], env);
    assert.equal(run.code, 1);
    assert.deepEqual(JSON.parse(run.stdout), {
      success: false,
      error: {
        code: 'INVALID_PARAMETERS',
        message: 'Invalid request parameters: plan.',
        details: { plan: 'must be one of standard, premium, enterprise' },
      },
    });
    const enterprise = cli(['accounts', 'create', '--name', 'X', '--plan', 'enterprise', '--json'], env);
    assert.equal(enterprise.code, 1);
    assert.match(JSON.parse(enterprise.stdout).error.details.rateLimit, /^enterprise needs a whole number/);
    const unknown = cli(['keys', 'revoke', 'key_nope', '--json'], env);
    assert.equal(unknown.code, 1);
    assert.equal(JSON.parse(unknown.stdout).error.code, 'NOT_FOUND');
  });

  it('explains wrong usage and bad configuration with exit code 2', () => {
    const missing = cli(['accounts', 'create', '--plan', 'standard'], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--name is required/);
    const unknown = cli(['teleport'], env);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command: teleport/);
    const bare = cli(['accounts'], env);
    assert.equal(bare.code, 2);
    assert.match(bare.stderr, /^gate402: accounts needs a subcommand: create, set-plan, list\n/);
    assert.match(
      cli(['keys', 'rotate'], env).stderr,
      /unknown command: keys rotate \(keys has create, list, revoke\)/,
    );
    const badConfig = cli(['migrate'], { ...env, PORT: 'eighty' });
    assert.equal(badConfig.code, 2);
    assert.match(badConfig.stderr, /PORT: must be a whole number from 0 to 65535, got "eighty"/);
    // Configured by the environment only: an option is refused, not ignored (it would serve on 8402).
    const option = cli(['serve', '--port', '9000'], env);
    assert.equal(option.code, 2);
    assert.match(option.stderr, /serve takes no arguments \(got --port 9000\).*PORT=9000/);
    assert.equal(cli(['migrate', '--force'], env).code, 2);
  });

  it('migrates on demand and reports when there is nothing to do', () => {
    const fresh = tempDir();
    try {
      const first = cliJson(['migrate'], { DATA_DIR: fresh.path });
      assert.ok(first.migrated.length > 0);
      assert.deepEqual(cliJson(['migrate'], { DATA_DIR: fresh.path }), { migrated: [] });
    } finally {
      fresh.dispose();
    }
  });

  it('on an empty DATA_DIR, serve creates a demo account and prints a working key and curl line', async () => {
    const fresh = tempDir();
    const server = await serve({ DATA_DIR: fresh.path });
    try {
      const key = /(g402_sk_[A-Za-z0-9_-]{43})/.exec(server.output())?.[1];
      assert.ok(key, 'a key was printed');
      assert.ok(server.output().includes(`curl -H "Authorization: Bearer ${key}" ${server.url}/account`));
      const res = await getAccount(server.url, key);
      assert.equal(res.status, 200);
      assert.equal(res.body.plan, 'enterprise');
    } finally {
      assert.equal(await stop(server.child), 0);
      fresh.dispose();
    }
  });

  it('runs the embedded chains in processes that stop with the gateway, even when it is killed', async () => {
    const fresh = tempDir();
    const server = await serve({ DATA_DIR: fresh.path, GATE402_DEMO: 'false', LOG_LEVEL: 'info' });
    try {
      const solana = /embedded Solana localnet: RPC (http:\/\/[^\s,]+)/.exec(server.output())?.[1];
      const evm = /embedded EVM chain \(anvil\): RPC (http:\/\/[^\s,]+)/.exec(server.output())?.[1];
      assert.ok(solana && evm, `both chains announced:\n${server.output()}`);
      assert.equal(await answers(solana, 'getHealth'), true);
      assert.equal(await answers(evm, 'eth_chainId'), true);

      const killed = new Promise((resolve) => server.child.once('exit', resolve));
      server.child.kill('SIGKILL');
      await killed;
      for (const [name, url, method] of [
        ['localnet', solana, 'getHealth'],
        ['anvil', evm, 'eth_chainId'],
      ] as const) {
        const deadline = Date.now() + 15_000;
        while ((await answers(url, method)) && Date.now() < deadline) await sleep(200);
        assert.equal(await answers(url, method), false, `${name} stopped with the gateway`);
      }
    } finally {
      server.child.kill('SIGKILL');
      fresh.dispose();
    }
  });

  it('is on the PATH as `npx gate402` after npm install', () => {
    const run = spawnSync('npx', ['--no-install', 'gate402', '--version'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout.trim(), /^\d+\.\d+\.\d+$/);
  });

  it('works against PostgreSQL through DATABASE_URL', { skip: SKIP_POSTGRES }, async () => {
    const storage = await tempPostgres();
    try {
      assert.equal(storage.location.kind, 'postgres');
      const schema = storage.location.kind === 'postgres' ? storage.location.schema : '';
      const url = new URL(DATABASE_URL ?? '');
      url.searchParams.set('options', `-c search_path=${schema}`);
      const pgEnv = { DATABASE_URL: url.toString() };
      const account = cliJson(['accounts', 'create', '--name', 'Pg', '--plan', 'standard'], pgEnv);
      const key = cliJson(['keys', 'create', '--account', account.id], pgEnv);
      const listed = cliJson(['keys', 'list', '--account', account.id], pgEnv);
      assert.deepEqual(
        listed.map((k: { id: string }) => k.id),
        [key.id],
      );
    } finally {
      await storage.dispose();
    }
  });
});
