import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { WebSocket } from 'ws';
import { DEFAULT_PLAN_ACCESS, FEATURES, type Feature } from '../../../src/domain/plan-access.ts';
import type { Door } from '../../../src/http/doors.ts';
import { type DashboardApp, startDashboardApp } from '../../support/dashboard-app.ts';
import { openStream } from '../../support/stream-client.ts';

const PASSWORD = 'correct horse battery';

/**
 * Routes nobody's plan decides: the home page (/), health, documents, the dashboard's page files, and /metrics (its own
 * token). Anything else the app serves must be a door of the access policy.
 */
const PUBLIC = [
  /^\/$/,
  /^\/healthz$/,
  /^\/readyz$/,
  /^\/\.well-known\//,
  /^\/openapi\.json$/,
  /^\/asyncapi\.json$/,
  /^\/docs/,
  /^\/dashboard\*?$/,
  /^\/metrics$/,
];

/** Every method and path in Fastify's own route tree (HEAD included), read from printRoutes. */
function routeTree(app: FastifyInstance): { method: string; url: string }[] {
  const found: { method: string; url: string }[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│├└─\s]*)(\S+) \(([^)]+)\)$/.exec(line);
    if (match === null) continue;
    const depth = (match[1] ?? '').length / 4;
    stack.length = depth;
    const path = (stack[depth - 1] ?? '') + (match[2] ?? '');
    stack.push(path);
    for (const method of (match[3] ?? '').split(', ')) found.push({ method, url: path });
  }
  return found;
}

interface Browser {
  readonly cookie: string;
  readonly csrf: string;
  readonly accountId: string;
}

async function signUp(gw: DashboardApp, email: string): Promise<Browser> {
  const res = await gw.app.inject({
    method: 'POST',
    url: '/dashboard/api/signup',
    payload: { email, password: PASSWORD },
  });
  assert.equal(res.statusCode, 200, res.body);
  const cookie = String(res.headers['set-cookie']).split(';')[0] ?? '';
  return { cookie, csrf: res.json().csrfToken, accountId: res.json().accountId };
}

function concrete(url: string): string {
  return url.replace(/:[^/]+/g, 'x');
}

/** One request through a door, as the caller the door knows: a key, or a logged-in browser. */
function knock(door: Door, who: { key: string; browser: Browser }): InjectOptions {
  const method = door.method as InjectOptions['method'] & string;
  const headers: Record<string, string> =
    door.way === 'dashboard'
      ? { cookie: who.browser.cookie, 'x-csrf-token': who.browser.csrf }
      : { authorization: `Bearer ${who.key}` };
  const withBody = method !== 'GET' && method !== 'HEAD' && method !== 'DELETE';
  return { method, url: concrete(door.url), headers, ...(withBody ? { payload: {} } : {}) };
}

function refusedByPlan(res: LightMyRequestResponse): boolean {
  return res.statusCode === 403 && /plan does not include/.test(res.json().error.message);
}

/** The stream door: the upgrade's answer, and the close code of an `auth` message on an open socket. */
async function streamDoor(base: string, key: string): Promise<{ upgrade: number; authMessage: number }> {
  const url = `${base.replace('http', 'ws')}/v1/payments/stream`;
  const upgrade = await openStream(url, { headers: { authorization: `Bearer ${key}` } }).then(
    (client) => {
      client.close();
      return 101;
    },
    (error: { status: number }) => error.status,
  );
  const ws = new WebSocket(url);
  await new Promise((resolve) => ws.once('open', resolve));
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  const opened = new Promise<number>((resolve) =>
    ws.on('message', (data) => {
      if (JSON.parse(data.toString()).type === 'authenticated') resolve(1000);
    }),
  );
  ws.send(JSON.stringify({ type: 'auth', apiKey: key }));
  const authMessage = await Promise.race([closed, opened]);
  ws.close();
  return { upgrade, authMessage };
}

describe('one access policy at every door (API, stream, dashboard)', () => {
  let gw: DashboardApp;
  let base: string;
  /** The plan table the app reads at each decision; the tests change the Enterprise row. */
  const table = {
    standard: new Set(DEFAULT_PLAN_ACCESS.standard),
    premium: new Set(DEFAULT_PLAN_ACCESS.premium),
    enterprise: new Set<Feature>(FEATURES),
  };
  /** An Standard account's browser and key: what the known hole was found with. */
  let standard: { key: string; browser: Browser };
  /** An Enterprise account (a rate too high to meet here), whose row of the table the tests rewrite. */
  let enterprise: { key: string; browser: Browser };

  before(async () => {
    gw = await startDashboardApp({ planAccess: table });
    base = await gw.app.listen({ port: 0, host: '127.0.0.1' });
    const s = await signUp(gw, 'standard@example.test');
    standard = { browser: s, key: (await gw.services.accounts.createKey(s.accountId, 'k')).key };
    const e = await signUp(gw, 'enterprise@example.test');
    await gw.services.accounts.setPlan(e.accountId, { plan: 'enterprise', rateLimit: 1_000_000 });
    enterprise = { browser: e, key: (await gw.services.accounts.createKey(e.accountId, 'k')).key };
  });
  after(async () => {
    // One client connection of this file (no request bytes seen; not identified yet) outlives the test
    // until the keep-alive timeout; closing every connection keeps the file from waiting 72 s for it.
    const closing = gw.close();
    gw.app.server.closeAllConnections();
    await closing;
  });

  it('refuses a Standard account webhooks and the live list through the dashboard as through its key', async () => {
    const api = await gw.app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: { authorization: `Bearer ${standard.key}` },
      payload: { url: 'http://127.0.0.1:9/hook' },
    });
    assert.equal(api.statusCode, 403);
    const dashboard = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/webhooks',
      headers: { cookie: standard.browser.cookie, 'x-csrf-token': standard.browser.csrf },
      payload: { url: 'http://127.0.0.1:9/hook' },
    });
    assert.equal(dashboard.statusCode, 403, dashboard.body);
    assert.equal(dashboard.json().error.code, 'FORBIDDEN');
    assert.equal(dashboard.json().error.message, 'The standard plan does not include webhooks.');
    assert.deepEqual(await gw.store.webhooks.listByAccount(standard.browser.accountId), [], 'none was made');
    const live = await fetch(`${base}/dashboard/api/payments/live`, {
      headers: { cookie: standard.browser.cookie },
    });
    assert.equal(live.status, 403);
    assert.equal(((await live.json()) as { error: { code: string } }).error.code, 'FORBIDDEN');
    assert.deepEqual(await streamDoor(base, standard.key), { upgrade: 403, authMessage: 4003 });
  });

  it('knows every route the app serves: each is a door of the policy or on the short public list', () => {
    const doors = gw.app.doors;
    const isDoor = (method: string, url: string) => doors.some((d) => d.method === method && d.url === url);
    const unguarded = routeTree(gw.app).filter(
      (r) => !isDoor(r.method, r.url) && !PUBLIC.some((p) => p.test(r.url)) && r.method !== 'OPTIONS',
    );
    assert.deepEqual(unguarded, []);
    // The OpenAPI document's authenticated operations are the API doors, one for one.
    const doc = gw.app.swagger() as { paths: Record<string, Record<string, { security?: unknown[] }>> };
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        const url = path.replace(/\{([^}]+)\}/g, ':$1');
        if (op.security === undefined || path === '/metrics') continue;
        assert.ok(isDoor(method.toUpperCase(), url), `${method} ${path} is no door`);
      }
    }
    assert.ok(doors.some((d) => d.way === 'stream' && d.access === 'stream'));
    const dashboard = doors.filter((d) => d.way === 'dashboard');
    assert.ok(dashboard.some((d) => d.url === '/dashboard/api/webhooks' && d.access === 'webhooks'));
    assert.ok(dashboard.some((d) => d.url === '/dashboard/api/payments/live' && d.access === 'stream'));
  });

  it('checks each door against exactly its own feature of the plan table', async () => {
    const featured = gw.app.doors.filter(
      (d): d is Door & { access: Feature } =>
        d.method !== 'HEAD' && d.access !== 'session' && d.access !== 'public',
    );
    assert.ok(featured.length > 30, `only ${featured.length} doors`);
    for (const door of featured) {
      const what = `${door.method} ${door.url}`;
      table.enterprise = new Set(FEATURES.filter((f) => f !== door.access));
      if (door.way === 'stream') {
        assert.deepEqual(await streamDoor(base, enterprise.key), { upgrade: 403, authMessage: 4003 }, what);
      } else {
        const refused = await gw.app.inject(knock(door, enterprise));
        assert.ok(
          refusedByPlan(refused),
          `${what} without ${door.access}: ${refused.statusCode} ${refused.body}`,
        );
      }
      table.enterprise = new Set([door.access]);
      if (door.way === 'stream') {
        assert.deepEqual(await streamDoor(base, enterprise.key), { upgrade: 101, authMessage: 1000 }, what);
      } else if (door.url === '/dashboard/api/payments/live') {
        const abort = new AbortController();
        const res = await fetch(`${base}${door.url}`, {
          headers: { cookie: enterprise.browser.cookie },
          signal: abort.signal,
        });
        assert.equal(res.status, 200, what);
        abort.abort();
      } else {
        const allowed = await gw.app.inject(knock(door, enterprise));
        assert.ok(
          !refusedByPlan(allowed) && allowed.statusCode !== 401,
          `${what} with ${door.access}: ${allowed.body}`,
        );
      }
    }
    table.enterprise = new Set(FEATURES);
  });

  it('lets a session-only dashboard door (API keys) be used whatever the plan grants', async () => {
    table.enterprise = new Set();
    try {
      const keys = await gw.app.inject(
        knock({ way: 'dashboard', method: 'GET', url: '/dashboard/api/keys', access: 'session' }, enterprise),
      );
      assert.equal(keys.statusCode, 200, keys.body);
    } finally {
      table.enterprise = new Set(FEATURES);
    }
  });
});
