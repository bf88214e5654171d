import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { FEATURES } from '../../src/domain/plan-access.ts';
import { tempDir } from '../support/databases.ts';
import { GATE402_COMMAND } from '../support/gate402-command.ts';
import { openStream } from '../support/stream-client.ts';

/**
 * What a new user sees on the first `npm start`: `gate402 serve` on an empty DATA_DIR, as a process,
 * with its output read the way a person reads it.
 */
describe('the first run', () => {
  let dir: ReturnType<typeof tempDir>;
  let child: ChildProcess;
  let url: string;
  let output = '';
  let key: string;
  let email: string;
  let password: string;

  before(async () => {
    dir = tempDir();
    // The CI's database settings are left out: the first run is the embedded default (SQLite).
    const { DATABASE_URL: _d, REDIS_URL: _r, LOG_FORMAT: _f, ...env } = process.env;
    child = spawn(process.execPath, [...GATE402_COMMAND, 'serve'], {
      env: {
        ...env,
        DATA_DIR: dir.path,
        PORT: '0',
        LOCALNET_PORT: '0',
        ANVIL_PORT: '0',
        LOG_LEVEL: 'info',
        // stdout is a pipe here, where the default is JSON; the terminal's format is asked for by name.
        LOG_FORMAT: 'pretty',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 60_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /listening on (http:\/\/\S+)[\s\S]*Try it:/.exec(output);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
    });
    key = /API key: +(g402_sk_[A-Za-z0-9_-]{43})/.exec(output)?.[1] ?? '';
    email = /Dashboard log-in: +(\S+)/.exec(output)?.[1] ?? '';
    password = /Dashboard password: +(\S+)/.exec(output)?.[1] ?? '';
  });

  after(async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    dir.dispose();
  });

  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, ...(init.headers as Record<string, string>) },
    });

  it('prints the demo API key and a dashboard log-in once, in the banner and never in a log line', () => {
    assert.ok(key !== '', `an API key was printed:\n${output}`);
    assert.equal(email, 'demo@gate402.local');
    assert.match(password, /^[A-Za-z0-9_-]{20}$/);
    assert.ok(output.includes(`curl -H "Authorization: Bearer ${key}" ${url}/account`));
    assert.match(
      output,
      /A demo account \(acct_[0-9A-Z]{26}, Enterprise plan: every feature\) was created\./,
    );
    assert.equal(output.split(password).length - 1, 1, 'the password appears once');
    for (const line of output.split('\n').filter((l) => /^\d\d:\d\d:\d\d\.\d{3} /.test(l))) {
      assert.ok(
        !line.includes(password) && !line.includes(key.slice(12)),
        `a log line holds a secret: ${line}`,
      );
    }
  });

  it('puts the demo account on a plan with every feature: stream, webhooks, the facilitator and /mcp answer', async () => {
    const account = await api('/account');
    assert.equal(account.status, 200);
    const body = (await account.json()) as { plan: string; rateLimit: { limit: number } };
    assert.equal(body.plan, 'enterprise');
    assert.equal(body.rateLimit.limit, 1000);
    assert.equal(FEATURES.length, 15, 'a new feature is checked here too');

    const supported = await api('/facilitator/supported');
    assert.equal(supported.status, 200, await supported.clone().text());
    assert.ok(((await supported.json()) as { kinds: unknown[] }).kinds.length > 0);

    const webhooks = await api('/webhooks');
    assert.equal(webhooks.status, 200, await webhooks.clone().text());

    const mcp = await api('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(mcp.status, 200, await mcp.clone().text());
    const tools = ((await mcp.json()) as { result: { tools: { name: string }[] } }).result.tools;
    assert.ok(tools.some((t) => t.name === 'fetch_paid_url'));

    const stream = await openStream(`${url.replace('http', 'ws')}/v1/payments/stream`, {
      headers: { authorization: `Bearer ${key}` },
    });
    try {
      assert.equal(stream.ws.readyState, stream.ws.OPEN, 'the upgrade was accepted');
    } finally {
      stream.close();
    }
  });

  it('logs in to the dashboard with the printed password and shows what the key made', async () => {
    const created = await api('/wallets', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chain: 'solana' }),
    });
    assert.equal(created.status, 200, await created.clone().text());
    const { address } = (await created.json()) as { address: string };

    const login = await fetch(`${url}/dashboard/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    assert.equal(login.status, 200, await login.clone().text());
    const session = (await login.json()) as { accountId: string };
    const account = (await (await api('/account')).json()) as { id: string };
    assert.equal(session.accountId, account.id);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const wallets = await fetch(`${url}/dashboard/api/wallets`, { headers: { cookie } });
    assert.equal(wallets.status, 200);
    const listed = (await wallets.json()) as { wallets: { address: string }[] };
    assert.deepEqual(
      listed.wallets.map((w) => w.address),
      [address],
    );

    const wrong = await fetch(`${url}/dashboard/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: `${password}x` }),
    });
    assert.equal(wrong.status, 401);
  });

  it('leads from / to the dashboard, and gives JSON clients the links', async () => {
    const home = await fetch(`${url}/`, { redirect: 'manual', headers: { accept: 'text/html,*/*' } });
    assert.equal(home.status, 302);
    assert.equal(home.headers.get('location'), '/dashboard');
    const json = await fetch(`${url}/`, { headers: { accept: 'application/json' } });
    assert.equal(json.status, 200);
    assert.deepEqual(((await json.json()) as { links: unknown }).links, {
      docs: '/docs',
      openapi: '/openapi.json',
      asyncapi: '/asyncapi.json',
      health: '/healthz',
      dashboard: '/dashboard',
    });
  });

  it('writes readable log lines with LOG_FORMAT=pretty, no JSON', () => {
    assert.match(
      output,
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}storage migrated {2}storage=\S+gate402\.sqlite migrated=\[/m,
    );
    assert.match(
      output,
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}gate402 listening {2}url=http:\/\/127\.0\.0\.1:\d+$/m,
    );
    assert.doesNotMatch(output, /\{"level":/);
  });
});
