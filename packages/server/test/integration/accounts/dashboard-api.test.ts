import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { newId } from '../../../src/domain/ids.ts';
import { MAX_LIVE_STREAMS_PER_SESSION } from '../../../src/http/dashboard/live-stream-registry.ts';
import { newPayment } from '../../../src/services/payments/new-payment.ts';
import { type DashboardApp, startDashboardApp } from '../../support/dashboard-app.ts';
import { GATE402_COMMAND } from '../../support/gate402-command.ts';
import { lastCharacterChanged } from '../../support/last-character-changed.ts';
import { WebhookReceiver } from '../../support/webhook-receiver.ts';

const PASSWORD = 'correct horse battery';

/** A browser's session: the cookie the gateway set and the CSRF token it gave. */
interface Browser {
  cookie: string;
  csrf: string;
  accountId: string;
}

function sessionCookieOf(res: LightMyRequestResponse): string {
  const header = res.headers['set-cookie'];
  const value = Array.isArray(header) ? header[0] : header;
  assert.ok(value, 'a Set-Cookie header');
  return value;
}

/**
 * Signs up (a Standard account); with `plan`, the operator then moves the account to it — the webhooks and
 * the live list need Premium under the default plan table, in the dashboard as through the API.
 */
async function signUp(gw: DashboardApp, email: string, plan?: 'premium'): Promise<Browser> {
  const res = await gw.app.inject({
    method: 'POST',
    url: '/dashboard/api/signup',
    payload: { email, password: PASSWORD },
  });
  assert.equal(res.statusCode, 200, res.body);
  const cookie = sessionCookieOf(res).split(';')[0] ?? '';
  const accountId: string = res.json().accountId;
  if (plan !== undefined) await gw.services.accounts.setPlan(accountId, { plan });
  return { cookie, csrf: res.json().csrfToken, accountId };
}

function as(browser: Browser, options: InjectOptions & { csrf?: string | false }): InjectOptions {
  const { csrf, ...rest } = options;
  const headers: Record<string, string> = {
    cookie: browser.cookie,
    ...(rest.headers as Record<string, string>),
  };
  if (csrf !== false) headers['x-csrf-token'] = csrf ?? browser.csrf;
  return { ...rest, headers };
}

/** Routes that need no session: the page's settings, sign-up and log-in. */
const PUBLIC_ROUTES = ['/dashboard/api/config', '/dashboard/api/signup', '/dashboard/api/login'];

/**
 * Every route of the app under /dashboard/api, read from Fastify's own route tree, so a route added
 * later is covered by the security tests without anyone remembering to list it.
 */
function dashboardRoutes(app: DashboardApp['app']): { method: 'GET' | 'POST' | 'DELETE'; url: string }[] {
  const found: { method: 'GET' | 'POST' | 'DELETE'; url: string }[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│├└─\s]*)(\S+) \(([^)]+)\)$/.exec(line);
    if (match === null) continue;
    const depth = (match[1] ?? '').length / 4;
    stack.length = depth;
    const path = (stack[depth - 1] ?? '') + (match[2] ?? '');
    stack.push(path);
    if (!path.startsWith('/dashboard/api/')) continue;
    for (const method of (match[3] ?? '').split(', ')) {
      if (method === 'GET' || method === 'POST' || method === 'DELETE') {
        found.push({ method, url: path.replace(/:[^/]+/g, 'x') });
      }
    }
  }
  return found;
}

describe('dashboard API: sign-up, log-in and sessions', () => {
  let gw: DashboardApp;
  before(async () => {
    gw = await startDashboardApp();
  });
  after(() => gw.close());

  it('signs up into a new Standard account with an HttpOnly, SameSite=Strict session cookie and no password stored', async () => {
    const res = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/signup',
      payload: { email: '  Alice@Example.test ', password: PASSWORD },
    });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.email, 'alice@example.test');
    assert.match(body.accountId, /^acct_/);
    assert.match(body.csrfToken, /^[A-Za-z0-9_-]{43}$/);
    const cookie = sessionCookieOf(res);
    assert.match(
      cookie,
      /^gate402_session=[A-Za-z0-9_-]{43}; Path=\/dashboard; HttpOnly; SameSite=Strict; Expires=/,
    );
    assert.doesNotMatch(cookie, /Secure/, 'plain http: a Secure cookie would never come back');

    const account = await gw.services.accounts.getAccount(body.accountId);
    assert.equal(account.plan, 'standard');
    const user = await gw.store.dashboardUsers.findByEmail('alice@example.test');
    assert.match(user?.passwordHash ?? '', /^scrypt\$32768\$8\$1\$/);
    assert.ok(!user?.passwordHash.includes(PASSWORD));

    const session = await gw.app.inject({
      method: 'GET',
      url: '/dashboard/api/session',
      headers: { cookie: cookie.split(';')[0] ?? '' },
    });
    assert.equal(session.statusCode, 200);
    assert.deepEqual(
      { email: session.json().email, accountId: session.json().accountId, csrf: session.json().csrfToken },
      { email: 'alice@example.test', accountId: body.accountId, csrf: body.csrfToken },
    );
  });

  it('answers bad sign-up input with INVALID_PARAMETERS and a detail per field', async () => {
    const cases: [unknown, Record<string, string>][] = [
      [{ email: 'bob@example.test', password: 'short' }, { password: 'must be 10 to 200 characters' }],
      [{ email: 'not an email', password: PASSWORD }, { email: 'must be an email address' }],
      // Control characters: a NUL failed the insert on PostgreSQL (500).
      [{ email: 'bob\u0000@example.test', password: PASSWORD }, { email: 'must be an email address' }],
      [{ password: PASSWORD }, { email: 'is required' }],
      [{ email: 'bob@example.test', password: PASSWORD, plan: 'premium' }, { plan: 'is not a known field' }],
      [{ email: 'bob@example.test', password: 12345678901 }, { password: 'must be a string' }],
    ];
    for (const [payload, details] of cases) {
      const res = await gw.app.inject({
        method: 'POST',
        url: '/dashboard/api/signup',
        payload: payload as object,
      });
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.equal(res.json().error.code, 'INVALID_PARAMETERS');
      assert.deepEqual(res.json().error.details, details);
    }
  });

  it('refuses a second sign-up with the same email with a generic answer, and leaves no account behind', async () => {
    await signUp(gw, 'carol@example.test');
    const accountsBefore = await gw.store.accounts.count();
    const res = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/signup',
      payload: { email: 'CAROL@example.test', password: 'another password' },
    });
    // Never "registered": the answer names the field, as for any email that cannot be used.
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error.code, 'INVALID_PARAMETERS');
    assert.deepEqual(res.json().error.details, {
      email: 'cannot be used to sign up here; if you already have an account, log in',
    });
    assert.doesNotMatch(res.body, /regist|exist|taken/i);
    assert.equal(res.headers['set-cookie'], undefined);
    assert.equal(await gw.store.accounts.count(), accountsBefore);
  });

  it('counts a refused sign-up against the per-address limit like any other', async () => {
    const limited = await startDashboardApp({ loginAttempts: 2 });
    try {
      const attempt = () =>
        limited.app.inject({
          method: 'POST',
          url: '/dashboard/api/signup',
          payload: { email: 'probe@example.test', password: PASSWORD },
        });
      assert.equal((await attempt()).statusCode, 200);
      assert.equal((await attempt()).statusCode, 400, 'taken');
      const third = await attempt();
      assert.equal(third.statusCode, 429, 'probing more emails from one address is slowed down');
      assert.equal(third.json().error.code, 'RATE_LIMIT_EXCEEDED');
    } finally {
      await limited.close();
    }
  });

  it('logs in with the right password only, answering a wrong password and an unknown email alike', async () => {
    await signUp(gw, 'dave@example.test');
    const ok = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: 'dave@example.test', password: PASSWORD },
    });
    assert.equal(ok.statusCode, 200);
    assert.match(sessionCookieOf(ok), /^gate402_session=/);
    const wrong = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: 'dave@example.test', password: 'wrong password!' },
    });
    const unknown = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: 'nobody@example.test', password: PASSWORD },
    });
    // Not an email any login can have (its NUL failed the look-up on PostgreSQL with 500).
    const malformed = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: 'dave\u0000@example.test', password: PASSWORD },
    });
    for (const res of [wrong, unknown, malformed]) {
      assert.equal(res.statusCode, 401);
      assert.deepEqual(
        { code: res.json().error.code, message: res.json().error.message },
        { code: 'UNAUTHORIZED', message: 'Email or password is wrong.' },
      );
      assert.equal(res.headers['set-cookie'], undefined);
    }
  });

  it('limits log-in attempts per email: the 4th in a minute is 429 even with the right password', async () => {
    const gw = await startDashboardApp({ loginAttempts: 3 });
    after(() => gw.close());
    await signUp(gw, 'erin@example.test');
    for (let i = 0; i < 3; i++) {
      const res = await gw.app.inject({
        method: 'POST',
        url: '/dashboard/api/login',
        payload: { email: 'erin@example.test', password: `guess number ${i}` },
      });
      assert.equal(res.statusCode, 401);
    }
    const res = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: 'Erin@example.test', password: PASSWORD },
    });
    assert.equal(res.statusCode, 429);
    assert.equal(res.json().error.code, 'RATE_LIMIT_EXCEEDED');
    assert.ok(res.json().error.retryAfter >= 1 && res.json().error.retryAfter <= 60);
    assert.equal(res.headers['retry-after'], String(res.json().error.retryAfter));
  });

  it('limits sign-ups per client address', async () => {
    const limited = await startDashboardApp({ loginAttempts: 2 });
    try {
      const attempt = (email: string) =>
        limited.app.inject({
          method: 'POST',
          url: '/dashboard/api/signup',
          payload: { email, password: PASSWORD },
        });
      assert.equal((await attempt('one@example.test')).statusCode, 200);
      assert.equal((await attempt('two@example.test')).statusCode, 200);
      const third = await attempt('three@example.test');
      assert.equal(third.statusCode, 429);
      assert.equal(third.json().error.code, 'RATE_LIMIT_EXCEEDED');
      assert.equal(await limited.store.dashboardUsers.findByEmail('three@example.test'), undefined);
    } finally {
      await limited.close();
    }
  });

  it('logs out: the cookie is cleared and the session stops working', async () => {
    const browser = await signUp(gw, 'frank@example.test');
    const res = await gw.app.inject(as(browser, { method: 'POST', url: '/dashboard/api/logout' }));
    assert.equal(res.statusCode, 200);
    assert.match(
      sessionCookieOf(res),
      /^gate402_session=; Path=\/dashboard; HttpOnly; SameSite=Strict; Expires=Thu, 01 Jan 1970/,
    );
    const after = await gw.app.inject(as(browser, { method: 'GET', url: '/dashboard/api/keys' }));
    assert.equal(after.json().error.code, 'UNAUTHORIZED');
  });

  it('ends the session a browser held when it logs in again, as anyone: one browser, one session', async () => {
    const earlier = await signUp(gw, 'grace@example.test');
    await signUp(gw, 'heidi@example.test');
    for (const email of ['grace@example.test', 'heidi@example.test']) {
      const held = await logInAs(gw, 'grace@example.test', PASSWORD);
      // The same browser, still sending the cookie of the session it held, logs in.
      const res = await gw.app.inject({
        method: 'POST',
        url: '/dashboard/api/login',
        headers: { cookie: held.cookie },
        payload: { email, password: PASSWORD },
      });
      assert.equal(res.statusCode, 200, res.body);
      const old = await gw.app.inject(as(held, { method: 'GET', url: '/dashboard/api/session' }));
      assert.equal(old.statusCode, 401, `the session held before logging in as ${email} still works`);
      const renewed = {
        ...held,
        cookie: sessionCookieOf(res).split(';')[0] ?? '',
        csrf: res.json().csrfToken,
      };
      const now = await gw.app.inject(as(renewed, { method: 'GET', url: '/dashboard/api/session' }));
      assert.equal(now.json().email, email);
    }
    // Another browser's session of the same user is not this browser's: it stays.
    const still = await gw.app.inject(as(earlier, { method: 'GET', url: '/dashboard/api/session' }));
    assert.equal(still.statusCode, 200);
  });
});

describe('dashboard API: security', () => {
  let gw: DashboardApp;
  let browser: Browser;
  before(async () => {
    gw = await startDashboardApp({ trustProxy: 1 });
    browser = await signUp(gw, 'sec@example.test', 'premium');
  });
  after(() => gw.close());

  it('answers 401 on every session route without a session cookie, or with a forged one', async () => {
    const routes = dashboardRoutes(gw.app).filter((r) => !PUBLIC_ROUTES.includes(r.url));
    assert.ok(routes.length >= 17, `found ${routes.length} routes`);
    assert.ok(routes.some((r) => r.method === 'GET' && r.url === '/dashboard/api/payments/live'));
    for (const { method, url } of routes) {
      for (const cookie of [undefined, 'gate402_session=forged', `gate402_session=${'A'.repeat(43)}`]) {
        const res = await gw.app.inject({
          method,
          url,
          headers: cookie === undefined ? {} : { cookie },
          ...(method === 'POST' ? { payload: {} } : {}),
        });
        assert.equal(res.statusCode, 401, `${method} ${url} ${cookie}`);
        assert.equal(res.json().error.code, 'UNAUTHORIZED');
      }
    }
  });

  it('asks every state-changing session route for the CSRF token', async () => {
    const changing = dashboardRoutes(gw.app).filter(
      (r) => r.method !== 'GET' && !PUBLIC_ROUTES.includes(r.url),
    );
    assert.ok(changing.length >= 8, `found ${changing.length} routes`);
    for (const { method, url } of changing) {
      const res = await gw.app.inject(
        as(browser, { method, url, csrf: false, ...(method === 'POST' ? { payload: {} } : {}) }),
      );
      assert.equal(res.statusCode, 403, `${method} ${url}`);
      assert.equal(res.json().error.message, 'Missing or wrong CSRF token; reload the page.');
    }
  });

  it('refuses state changes without the CSRF token, with a wrong one, and from another site', async () => {
    const create = { method: 'POST' as const, url: '/dashboard/api/keys', payload: { name: 'k' } };
    for (const csrf of [false, 'wrong', lastCharacterChanged(browser.csrf)] as const) {
      const res = await gw.app.inject(as(browser, { ...create, csrf }));
      assert.equal(res.statusCode, 403, String(csrf));
      assert.equal(res.json().error.code, 'FORBIDDEN');
    }
    const crossSite = await gw.app.inject(
      as(browser, { ...create, headers: { origin: 'https://evil.example', host: 'gateway.test' } }),
    );
    assert.equal(crossSite.statusCode, 403);
    assert.equal(crossSite.json().error.message, 'Cross-site request refused.');
    assert.deepEqual(await gw.services.accounts.listKeys(browser.accountId), [], 'no key was made');
    const sameSite = await gw.app.inject(
      as(browser, { ...create, headers: { origin: 'http://gateway.test', host: 'gateway.test' } }),
    );
    assert.equal(sameSite.statusCode, 200);
  });

  it('lets no cache keep any answer: a new key or signing secret, the CSRF token, a refusal', async () => {
    const answers: [string, LightMyRequestResponse][] = [
      [
        'log-in',
        await gw.app.inject({
          method: 'POST',
          url: '/dashboard/api/login',
          payload: { email: 'sec@example.test', password: PASSWORD },
        }),
      ],
      ['session', await gw.app.inject(as(browser, { method: 'GET', url: '/dashboard/api/session' }))],
      [
        'new key',
        await gw.app.inject(
          as(browser, { method: 'POST', url: '/dashboard/api/keys', payload: { name: 'cached?' } }),
        ),
      ],
      [
        'new webhook',
        await gw.app.inject(
          as(browser, {
            method: 'POST',
            url: '/dashboard/api/webhooks',
            payload: { url: 'http://127.0.0.1:9/no-store' },
          }),
        ),
      ],
      ['payments', await gw.app.inject(as(browser, { method: 'GET', url: '/dashboard/api/payments' }))],
      ['no session', await gw.app.inject({ method: 'GET', url: '/dashboard/api/keys' })],
    ];
    for (const route of dashboardRoutes(gw.app)) {
      answers.push([`${route.method} ${route.url} without a session`, await gw.app.inject(route)]);
    }
    for (const [what, res] of answers) {
      assert.ok(res.statusCode < 500, `${what}: ${res.body}`);
      assert.equal(res.headers['cache-control'], 'no-store', what);
    }
    assert.equal(answers[2]?.[1].statusCode, 200);
    assert.match(answers[3]?.[1].json().secret, /^whsec_/);
  });

  it('over TLS (X-Forwarded-Proto behind TRUST_PROXY) sets a Secure __Host- cookie, and reads no cookie planted without the prefix', async () => {
    const tls = { 'x-forwarded-proto': 'https' };
    const res = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      headers: tls,
      payload: { email: 'sec@example.test', password: PASSWORD },
    });
    assert.equal(res.statusCode, 200);
    assert.match(
      sessionCookieOf(res),
      /^__Host-gate402_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Expires=[^;]+; Secure$/,
    );
    const victim = sessionCookieOf(res).split(';')[0] ?? '';
    // An attacker's own session, planted for Path=/dashboard/api by a page of a sibling subdomain or over
    // plain http: the browser sends it first. The gateway must go on answering as the victim's session.
    const attacker = await signUp(gw, 'planter@example.test');
    const planted = `${attacker.cookie}; ${victim}`;
    const session = await gw.app.inject({
      method: 'GET',
      url: '/dashboard/api/session',
      headers: { ...tls, cookie: planted },
    });
    assert.equal(session.statusCode, 200);
    assert.equal(session.json().accountId, browser.accountId);
    const plantedOnly = await gw.app.inject({
      method: 'GET',
      url: '/dashboard/api/session',
      headers: { ...tls, cookie: attacker.cookie },
    });
    assert.equal(plantedOnly.statusCode, 401);
    const logOut = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/logout',
      headers: { ...tls, cookie: planted, 'x-csrf-token': session.json().csrfToken },
    });
    assert.equal(logOut.statusCode, 200);
    assert.match(sessionCookieOf(logOut), /^__Host-gate402_session=; Path=\/; .*; Secure$/);
    const victimAfter = await gw.app.inject({
      method: 'GET',
      url: '/dashboard/api/session',
      headers: { ...tls, cookie: victim },
    });
    assert.equal(victimAfter.statusCode, 401, 'the log-out ended the victim session, not the planted one');
    const attackerStill = await gw.app.inject({
      method: 'GET',
      url: '/dashboard/api/session',
      headers: { cookie: attacker.cookie },
    });
    assert.equal(attackerStill.statusCode, 200);
  });

  it("keeps accounts apart: another account's key, payment and webhook are not found", async () => {
    const other = await signUp(gw, 'other@example.test', 'premium');
    const key = await gw.app.inject(
      as(other, { method: 'POST', url: '/dashboard/api/keys', payload: { name: 'theirs' } }),
    );
    const hook = await gw.app.inject(
      as(other, {
        method: 'POST',
        url: '/dashboard/api/webhooks',
        payload: { url: 'http://127.0.0.1:9/hook' },
      }),
    );
    assert.equal(hook.statusCode, 200, hook.body);
    const probes = [
      { method: 'DELETE' as const, url: `/dashboard/api/keys/${key.json().id}` },
      { method: 'GET' as const, url: `/dashboard/api/webhooks/${hook.json().id}/deliveries` },
      { method: 'DELETE' as const, url: `/dashboard/api/webhooks/${hook.json().id}` },
      {
        method: 'PATCH' as const,
        url: `/dashboard/api/webhooks/${hook.json().id}`,
        payload: { enabled: false },
      },
      { method: 'GET' as const, url: '/dashboard/api/payments/pay_01JD0Q3ZK8M4F6X3V5N7R9T2AB' },
    ];
    for (const probe of probes) {
      const res = await gw.app.inject(as(browser, probe));
      assert.equal(res.statusCode, 404, probe.url);
      assert.match(res.json().error.code, /NOT_FOUND$/);
    }
    const stillThere = await gw.app.inject(as(other, { method: 'GET', url: '/dashboard/api/keys' }));
    assert.equal(stillThere.json().keys.length, 1);
    const theirHooks = await gw.app.inject(as(other, { method: 'GET', url: '/dashboard/api/webhooks' }));
    assert.equal(theirHooks.json().webhooks[0].enabled, true);
  });

  it('answers bad query and body input with INVALID_PARAMETERS, never 500', async () => {
    const cases: [InjectOptions, Record<string, string>][] = [
      [
        { method: 'GET', url: '/dashboard/api/payments?status=lost&limit=0' },
        {
          status: 'must be one of pending, submitted, confirmed, finalized, failed, expired, reverted',
          limit: 'must be between 1 and 100',
        },
      ],
      [
        { method: 'POST', url: '/dashboard/api/wallets', payload: { chain: 'bitcoin' } },
        { chain: 'must be one of solana, evm' },
      ],
      [
        { method: 'POST', url: '/dashboard/api/keys', payload: { name: '' } },
        { name: 'must be 1 to 100 characters' },
      ],
      [
        { method: 'POST', url: '/dashboard/api/keys', payload: { name: 'shop\u0000' } },
        { name: 'must not contain control characters' },
      ],
      // A NUL in a parameter failed its look-up on PostgreSQL (500); no parameter holds one.
      [
        { method: 'DELETE', url: '/dashboard/api/keys/key_%00' },
        { path: 'must not contain a NUL character (%00)' },
      ],
      [
        { method: 'GET', url: '/dashboard/api/payments?wallet=%00' },
        { query: 'must not contain a NUL character (%00)' },
      ],
      [
        {
          method: 'POST',
          url: '/dashboard/api/webhooks',
          payload: { url: 'http://127.0.0.1:9/x', eventTypes: ['payment.nope'] },
        },
        {
          'eventTypes.0':
            'must be one of payment.sent, payment.received, payment.confirmed, payment.finalized, payment.failed, payment.expired, payment.reverted, payment.refunded, payment.refund_reverted',
        },
      ],
    ];
    for (const [request, details] of cases) {
      const res = await gw.app.inject(as(browser, request));
      assert.equal(res.statusCode, 400, `${request.url} ${res.body}`);
      assert.equal(res.json().error.code, 'INVALID_PARAMETERS');
      assert.deepEqual(res.json().error.details, details);
    }
    const notJson = await gw.app.inject(
      as(browser, {
        method: 'POST',
        url: '/dashboard/api/keys',
        payload: '{',
        headers: { 'content-type': 'application/json' },
      }),
    );
    assert.equal(notJson.statusCode, 400);
    assert.equal(notJson.json().error.code, 'INVALID_PARAMETERS');
  });
});

describe('dashboard API: keys, usage and webhooks', () => {
  let gw: DashboardApp;
  let browser: Browser;
  before(async () => {
    gw = await startDashboardApp();
    browser = await signUp(gw, 'keys@example.test');
  });
  after(() => gw.close());

  it('creates a named key shown once that works against the API, lists it without the secret, and deletes it', async () => {
    const created = await gw.app.inject(
      as(browser, { method: 'POST', url: '/dashboard/api/keys', payload: { name: 'production' } }),
    );
    assert.equal(created.statusCode, 200);
    const { key, id, prefix } = created.json();
    assert.ok(key.startsWith(prefix));
    const api = await gw.app.inject({
      method: 'GET',
      url: '/account',
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(api.statusCode, 200);
    assert.equal(api.json().id, browser.accountId);

    const list = await gw.app.inject(as(browser, { method: 'GET', url: '/dashboard/api/keys' }));
    const [listed] = list.json().keys;
    assert.deepEqual(Object.keys(listed).sort(), [
      'createdAt',
      'id',
      'lastUsedAt',
      'name',
      'prefix',
      'scopes',
    ]);
    assert.deepEqual(listed.scopes, [], 'an ordinary key unless the admin scope is asked for');
    assert.equal(listed.name, 'production');
    assert.equal(typeof listed.lastUsedAt, 'number', 'the API call above used it');
    assert.ok(!list.body.includes(key));

    const deleted = await gw.app.inject(as(browser, { method: 'DELETE', url: `/dashboard/api/keys/${id}` }));
    assert.deepEqual(deleted.json(), { id, deleted: true });
    const refused = await gw.app.inject({
      method: 'GET',
      url: '/account',
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(refused.statusCode, 401);
    assert.deepEqual(
      (await gw.app.inject(as(browser, { method: 'GET', url: '/dashboard/api/keys' }))).json().keys,
      [],
    );
  });

  it('shows the plan, its limit and the API requests counted in the current window (its own requests not counted)', async () => {
    const { key } = (
      await gw.app.inject(
        as(browser, { method: 'POST', url: '/dashboard/api/keys', payload: { name: 'usage' } }),
      )
    ).json();
    const before = (
      await gw.app.inject(as(browser, { method: 'GET', url: '/dashboard/api/account' }))
    ).json();
    for (let i = 0; i < 3; i++) {
      await gw.app.inject({ method: 'GET', url: '/account', headers: { authorization: `Bearer ${key}` } });
    }
    const account = (
      await gw.app.inject(as(browser, { method: 'GET', url: '/dashboard/api/account' }))
    ).json();
    assert.equal(account.plan, 'standard');
    assert.equal(account.rateLimit, 100);
    assert.equal(account.windowSeconds, 60);
    assert.equal(account.used, before.used + 3);
    assert.ok(account.resetAt > Date.now() - 1_000 && account.resetAt <= Date.now() + 60_000);
  });

  it('pages the payments of every wallet of the account, filtered by wallet, type and status', async () => {
    const other = await signUp(gw, 'stranger@example.test');
    const record = (
      accountId: string,
      i: number,
      fields: { wallet: string; sent: boolean; status: 'confirmed' | 'failed' },
    ) =>
      newPayment(Date.UTC(2026, 0, 1) + i * 1_000, {
        id: newId('pay', Date.UTC(2026, 0, 1) + i * 1_000),
        accountId,
        direction: fields.sent ? 'sent' : 'received',
        mode: 'custodial',
        status: fields.status,
        network: 'solana:local',
        walletAddress: fields.wallet,
        sender: fields.sent ? fields.wallet : 'PAYER',
        recipient: fields.sent ? 'PAYEE' : fields.wallet,
        amount: BigInt(i) * 1_000_000_000n,
      });
    const mine = [
      record(browser.accountId, 1, { wallet: 'WALLET_A', sent: true, status: 'confirmed' }),
      record(browser.accountId, 2, { wallet: 'WALLET_A', sent: false, status: 'confirmed' }),
      record(browser.accountId, 3, { wallet: 'WALLET_B', sent: true, status: 'failed' }),
      record(browser.accountId, 4, { wallet: 'WALLET_B', sent: true, status: 'confirmed' }),
    ];
    for (const payment of mine) await gw.store.payments.insert(payment);
    await gw.store.payments.insert(
      record(other.accountId, 5, { wallet: 'WALLET_A', sent: true, status: 'confirmed' }),
    );
    const ids = async (query: string) => {
      const res = await gw.app.inject(
        as(browser, { method: 'GET', url: `/dashboard/api/payments?${query}` }),
      );
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json() as { total: number; payments: { paymentId: string; amount: number }[] };
      return [body.total, body.payments.map((p) => mine.findIndex((m) => m.id === p.paymentId) + 1)];
    };
    assert.deepEqual(await ids(''), [4, [4, 3, 2, 1]]);
    assert.deepEqual(await ids('limit=2&offset=1'), [4, [3, 2]]);
    assert.deepEqual(await ids('wallet=WALLET_A'), [2, [2, 1]]);
    assert.deepEqual(await ids('type=sent'), [3, [4, 3, 1]]);
    assert.deepEqual(await ids('type=sent&status=failed'), [1, [3]]);
    assert.deepEqual(await ids('wallet=WALLET_B&type=received'), [0, []]);
    const detail = await gw.app.inject(
      as(browser, { method: 'GET', url: `/dashboard/api/payments/${mine[3]?.id}` }),
    );
    assert.equal(detail.json().amount, 4);
    assert.equal(detail.json().explorerUrl, null, 'a local network has no explorer');
  });

  it('creates a webhook with its secret shown once, lists it without the secret, shows its deliveries and deletes it', async () => {
    await gw.services.accounts.setPlan(browser.accountId, { plan: 'premium' });
    const created = await gw.app.inject(
      as(browser, {
        method: 'POST',
        url: '/dashboard/api/webhooks',
        payload: { url: 'http://127.0.0.1:9/hook', eventTypes: ['payment.confirmed'] },
      }),
    );
    assert.equal(created.statusCode, 200, created.body);
    assert.match(created.json().secret, /^whsec_/);
    const list = await gw.app.inject(as(browser, { method: 'GET', url: '/dashboard/api/webhooks' }));
    assert.deepEqual(list.json().webhooks, [
      {
        id: created.json().id,
        url: 'http://127.0.0.1:9/hook',
        eventTypes: ['payment.confirmed'],
        createdAt: created.json().createdAt,
        enabled: true,
        disabledAt: null,
        disabledReason: null,
      },
    ]);
    assert.ok(!list.body.includes(created.json().secret));
    const deliveries = await gw.app.inject(
      as(browser, { method: 'GET', url: `/dashboard/api/webhooks/${created.json().id}/deliveries` }),
    );
    assert.deepEqual(deliveries.json(), { deliveries: [] });
    const redeliver = await gw.app.inject(
      as(browser, {
        method: 'POST',
        url: `/dashboard/api/webhooks/${created.json().id}/deliveries/dlv_missing/redeliver`,
      }),
    );
    assert.equal(redeliver.statusCode, 404);
    // An event of the account becomes a delivery; the endpoint refuses connections, so it is retried later,
    // and redeliver makes it due at once.
    await gw.store.events.append({
      id: newId('evt'),
      accountId: browser.accountId,
      type: 'payment.confirmed',
      paymentId: null,
      data: { amount: 1.5 },
      createdAt: Date.now(),
    });
    const log = async () =>
      (
        await gw.app.inject(
          as(browser, { method: 'GET', url: `/dashboard/api/webhooks/${created.json().id}/deliveries` }),
        )
      ).json().deliveries as { id: string; attempts: number; status: string; lastError: string | null }[];
    let first: { id: string; attempts: number } | undefined;
    for (let i = 0; i < 100 && (first === undefined || first.attempts === 0); i++) {
      [first] = await log();
      if (first === undefined || first.attempts === 0) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(first && first.attempts >= 1, 'the delivery was attempted');
    const again = await gw.app.inject(
      as(browser, {
        method: 'POST',
        url: `/dashboard/api/webhooks/${created.json().id}/deliveries/${first.id}/redeliver`,
      }),
    );
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().id, first.id);
    assert.equal(again.json().status, 'pending');
    const deleted = await gw.app.inject(
      as(browser, { method: 'DELETE', url: `/dashboard/api/webhooks/${created.json().id}` }),
    );
    assert.equal(deleted.statusCode, 200);
  });

  it('shows an endpoint that answered 410 Gone as disabled, with why and when, and enables it again', async () => {
    await gw.services.accounts.setPlan(browser.accountId, { plan: 'premium' });
    const receiver = new WebhookReceiver(() => 410);
    const url = await receiver.start();
    try {
      const created = await gw.app.inject(
        as(browser, { method: 'POST', url: '/dashboard/api/webhooks', payload: { url } }),
      );
      assert.equal(created.statusCode, 200, created.body);
      const id = created.json().id as string;
      await gw.store.events.append({
        id: newId('evt'),
        accountId: browser.accountId,
        type: 'payment.confirmed',
        paymentId: null,
        data: { amount: 1.5 },
        createdAt: Date.now(),
      });
      await receiver.until(1);
      const listed = async () =>
        (
          (await gw.app.inject(as(browser, { method: 'GET', url: '/dashboard/api/webhooks' }))).json()
            .webhooks as Record<string, unknown>[]
        ).find((w) => w.id === id);
      let shown = await listed();
      for (let i = 0; i < 100 && shown?.enabled !== false; i++) {
        await new Promise((r) => setTimeout(r, 50));
        shown = await listed();
      }
      const [delivery] = (
        await gw.app.inject(as(browser, { method: 'GET', url: `/dashboard/api/webhooks/${id}/deliveries` }))
      ).json().deliveries;
      assert.equal(shown?.enabled, false);
      assert.equal(shown?.disabledReason, `answered HTTP 410 Gone to delivery ${delivery.id}`);
      assert.equal(shown?.disabledAt, delivery.lastAttemptAt);

      const withoutToken = await gw.app.inject(
        as(browser, {
          method: 'PATCH',
          url: `/dashboard/api/webhooks/${id}`,
          payload: { enabled: true },
          csrf: false,
        }),
      );
      assert.equal(withoutToken.statusCode, 403);
      const enabled = await gw.app.inject(
        as(browser, { method: 'PATCH', url: `/dashboard/api/webhooks/${id}`, payload: { enabled: true } }),
      );
      assert.equal(enabled.statusCode, 200, enabled.body);
      assert.deepEqual(
        [enabled.json().enabled, enabled.json().disabledAt, enabled.json().disabledReason],
        [true, null, null],
      );
      assert.equal((await listed())?.enabled, true);
    } finally {
      await receiver.close();
    }
  });
});

describe('dashboard API: changing the password', () => {
  let gw: DashboardApp;
  before(async () => {
    gw = await startDashboardApp();
  });
  after(() => gw.close());

  const change = (browser: Browser, payload: object) =>
    gw.app.inject(as(browser, { method: 'POST', url: '/dashboard/api/password', payload }));
  const logIn = (password: string) =>
    gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: 'grace@example.test', password },
    });

  it('needs the current password and a valid new one, naming the field that is wrong', async () => {
    const browser = await signUp(gw, 'grace@example.test');
    const cases: [object, Record<string, string>][] = [
      [
        { currentPassword: 'not my password', newPassword: 'a fine new password' },
        { currentPassword: 'is not your current password' },
      ],
      [{ currentPassword: PASSWORD, newPassword: 'short' }, { newPassword: 'must be 10 to 200 characters' }],
      [
        { currentPassword: PASSWORD, newPassword: PASSWORD },
        { newPassword: 'must differ from the current password' },
      ],
      [{ newPassword: 'a fine new password' }, { currentPassword: 'is required' }],
    ];
    for (const [payload, details] of cases) {
      const res = await change(browser, payload);
      assert.equal(res.statusCode, 400, JSON.stringify(payload));
      assert.equal(res.json().error.code, 'INVALID_PARAMETERS');
      assert.deepEqual(res.json().error.details, details);
    }
    assert.equal((await logIn(PASSWORD)).statusCode, 200, 'the password did not change');
  });

  it('changes it, ends every session of the user and logs this browser in again with a new session', async () => {
    const here = await logInAs(gw, 'grace@example.test', PASSWORD);
    const elsewhere = await logInAs(gw, 'grace@example.test', PASSWORD);
    const res = await change(here, { currentPassword: PASSWORD, newPassword: 'a brand new password' });
    assert.equal(res.statusCode, 200, res.body);
    const renewed: Browser = {
      cookie: sessionCookieOf(res).split(';')[0] ?? '',
      csrf: res.json().csrfToken,
      accountId: res.json().accountId,
    };
    assert.notEqual(renewed.cookie, here.cookie);
    assert.notEqual(renewed.csrf, here.csrf);
    for (const ended of [here, elsewhere]) {
      const old = await gw.app.inject(as(ended, { method: 'GET', url: '/dashboard/api/session' }));
      assert.equal(old.statusCode, 401);
    }
    const now = await gw.app.inject(as(renewed, { method: 'GET', url: '/dashboard/api/session' }));
    assert.equal(now.statusCode, 200);
    assert.equal(now.json().email, 'grace@example.test');
    assert.equal((await logIn(PASSWORD)).statusCode, 401);
    assert.equal((await logIn('a brand new password')).statusCode, 200);
  });

  it('limits wrong current passwords per user', async () => {
    const limited = await startDashboardApp({ loginAttempts: 2 });
    try {
      const browser = await signUp(limited, 'heidi@example.test');
      const guess = (currentPassword: string) =>
        limited.app.inject(
          as(browser, {
            method: 'POST',
            url: '/dashboard/api/password',
            payload: { currentPassword, newPassword: 'a fine new password' },
          }),
        );
      assert.equal((await guess('guess number 1')).statusCode, 400);
      assert.equal((await guess('guess number 2')).statusCode, 400);
      const third = await guess(PASSWORD);
      assert.equal(third.statusCode, 429, 'even the right one, once over the limit');
      assert.equal(third.json().error.code, 'RATE_LIMIT_EXCEEDED');
    } finally {
      await limited.close();
    }
  });
});

describe('dashboard API: expired sessions', () => {
  it('are purged periodically, without anyone logging in', async () => {
    let clock = Date.now();
    const gw = await startDashboardApp({ now: () => clock, sessionPurgeIntervalMs: 50 });
    try {
      const browser = await signUp(gw, 'ivan@example.test');
      const token = browser.cookie.slice('gate402_session='.length);
      const idHash = createHash('sha256').update(token).digest('hex');
      // findActive at time 0 finds any stored row, expired or not.
      assert.ok(await gw.store.dashboardSessions.findActive(idHash, 0), 'stored');
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.ok(await gw.store.dashboardSessions.findActive(idHash, 0), 'not expired: kept');
      clock += 3_600_000 + 1;
      let row = await gw.store.dashboardSessions.findActive(idHash, 0);
      for (let i = 0; i < 50 && row !== undefined; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        row = await gw.store.dashboardSessions.findActive(idHash, 0);
      }
      assert.equal(row, undefined, 'expired: purged');
    } finally {
      await gw.close();
    }
  });
});

/** One Server-Sent Events connection to the live list, read as it arrives. */
interface LiveStream {
  readonly status: number;
  readonly body: string;
  /** Every event so far: `id` (payment events) and the event name and data. */
  readonly events: { id: string | undefined; event: string; data: string }[];
  readonly ended: Promise<void>;
  waitFor(count: number): Promise<void>;
  close(): void;
}

async function openLive(
  url: string,
  browser: Browser,
  headers: Record<string, string> = {},
): Promise<LiveStream> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { cookie: browser.cookie, accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  const events: LiveStream['events'] = [];
  let text = '';
  let wake = () => {};
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  const ended = (async () => {
    try {
      for (;;) {
        const chunk = await reader?.read();
        if (chunk === undefined || chunk.done) return;
        text += decoder.decode(chunk.value, { stream: true });
        for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n')) {
          const block = text.slice(0, end);
          text = text.slice(end + 2);
          const fields = Object.fromEntries(
            block
              .split('\n')
              .filter((line) => !line.startsWith(':') && line.includes(': '))
              .map((line) => [line.slice(0, line.indexOf(': ')), line.slice(line.indexOf(': ') + 2)]),
          );
          if (fields.data !== undefined) {
            events.push({ id: fields.id, event: fields.event ?? 'message', data: fields.data });
          }
        }
        wake();
      }
    } catch {
      // aborted by close()
    } finally {
      wake();
    }
  })();
  let done = false;
  void ended.then(() => {
    done = true;
  });
  return {
    status: response.status,
    get body() {
      return text;
    },
    events,
    ended,
    async waitFor(count) {
      const deadline = Date.now() + 10_000;
      while (events.length < count && !done && Date.now() < deadline) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 100);
        });
      }
      assert.ok(events.length >= count, `${events.length} of ${count} events: ${JSON.stringify(events)}`);
    },
    close: () => controller.abort(),
  };
}

describe('dashboard API: the live payment list', () => {
  let gw: DashboardApp;
  let base: string;
  let browser: Browser;
  before(async () => {
    gw = await startDashboardApp();
    base = `${await gw.app.listen({ port: 0, host: '127.0.0.1' })}/dashboard/api/payments/live`;
    browser = await signUp(gw, 'judy@example.test', 'premium');
  });
  after(() => gw.close());

  const record = async (accountId: string) => {
    const id = newId('evt');
    await gw.store.events.append({
      id,
      accountId,
      type: 'payment.confirmed',
      paymentId: null,
      data: { amount: 0.5 },
      createdAt: Date.now(),
    });
    return id;
  };
  const ids = (stream: LiveStream) => stream.events.filter((e) => e.event === 'payment').map((e) => e.id);

  it('resumes after a dropped connection from Last-Event-ID (or ?since): the missed events once, then live', async () => {
    const first = await openLive(base, browser);
    assert.equal(first.status, 200);
    const [e1, e2] = [await record(browser.accountId), await record(browser.accountId)];
    await first.waitFor(2);
    assert.deepEqual(ids(first), [e1, e2]);
    first.close();
    // While the browser is away: its own events, and another account's, which it must never see.
    const other = await signUp(gw, 'judy-other@example.test', 'premium');
    const [e3, , e4] = [
      await record(browser.accountId),
      await record(other.accountId),
      await record(browser.accountId),
    ];

    const resumed = await openLive(base, browser, { 'last-event-id': e2 });
    await resumed.waitFor(2);
    const e5 = await record(browser.accountId);
    await resumed.waitFor(3);
    assert.deepEqual(ids(resumed), [e3, e4, e5], 'no gap, no repeat, in order');
    assert.equal(JSON.parse(resumed.events[0]?.data ?? '{}').amount, 0.5);
    resumed.close();

    const bySince = await openLive(`${base}?since=${e3}`, browser);
    await bySince.waitFor(2);
    assert.deepEqual(ids(bySince), [e4, e5]);
    bySince.close();
  });

  it('paces a long replay to a browser that reads slowly without piling up listeners on the connection', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const since = await record(browser.accountId);
      // 60 events of ~100 KB: the replay waits for the browser to read many times over.
      const big = 'x'.repeat(100_000);
      const expected: string[] = [];
      for (let i = 0; i < 60; i++) {
        const id = newId('evt');
        await gw.store.events.append({
          id,
          accountId: browser.accountId,
          type: 'payment.confirmed',
          paymentId: null,
          data: { amount: 0.5, note: big },
          createdAt: Date.now(),
        });
        expected.push(id);
      }
      const response = await fetch(`${base}?since=${since}`, { headers: { cookie: browser.cookie } });
      const reader = response.body?.getReader();
      let received = '';
      while (expected.some((id) => !received.includes(`id: ${id}\n`))) {
        const chunk = await reader?.read();
        if (chunk === undefined || chunk.done) break;
        received += Buffer.from(chunk.value).toString('latin1');
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await reader?.cancel();
      assert.ok(
        expected.every((id) => received.includes(`id: ${id}\n`)),
        'every event of the replay arrived',
      );
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(
        warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message),
        [],
      );
    } finally {
      process.off('warning', onWarning);
    }
  });

  it("answers a since that is not one of the account's events with INVALID_PARAMETERS", async () => {
    const stranger = await signUp(gw, 'mallory@example.test', 'premium');
    const theirs = await record(stranger.accountId);
    const cases: [string, Record<string, string>, Record<string, string>][] = [
      [`${base}?since=evt_nope`, {}, { since: 'must be the id of one of your events (evt_…)' }],
      [`${base}?since=${theirs}`, {}, { since: 'must be the id of one of your events (evt_…)' }],
      [
        base,
        { 'last-event-id': theirs },
        { 'Last-Event-ID': 'must be the id of one of your events (evt_…)' },
      ],
      [
        base,
        { 'last-event-id': 'garbage' },
        { 'Last-Event-ID': 'must be the id of one of your events (evt_…)' },
      ],
    ];
    for (const [url, headers, details] of cases) {
      const res = await fetch(url, { headers: { cookie: browser.cookie, ...headers } });
      assert.equal(res.status, 400, url);
      const body = (await res.json()) as { error: { code: string; details: Record<string, string> } };
      assert.equal(body.error.code, 'INVALID_PARAMETERS');
      assert.deepEqual(body.error.details, details);
    }
  });

  it(`holds at most ${MAX_LIVE_STREAMS_PER_SESSION} streams per session: the oldest is closed with a reason`, async () => {
    const session = await logInAs(gw, 'judy@example.test', PASSWORD);
    const streams: LiveStream[] = [];
    for (let i = 0; i < MAX_LIVE_STREAMS_PER_SESSION; i++) streams.push(await openLive(base, session));
    const newest = await openLive(base, session);
    await streams[0]?.ended;
    assert.deepEqual(streams[0]?.events, [
      { id: undefined, event: 'closed', data: JSON.stringify({ reason: 'replaced' }) },
    ]);
    // The others, and another session of the same user, still get events.
    const elsewhere = await openLive(base, browser);
    const id = await record(browser.accountId);
    for (const open of [...streams.slice(1), newest, elsewhere]) {
      await open.waitFor(1);
      assert.deepEqual(ids(open), [id]);
      open.close();
    }
  });

  it('ends the streams of a session that logs out, and of every session after a password change', async () => {
    const a = await logInAs(gw, 'judy@example.test', PASSWORD);
    const b = await logInAs(gw, 'judy@example.test', PASSWORD);
    const [streamA, streamB] = [await openLive(base, a), await openLive(base, b)];
    await gw.app.inject(as(a, { method: 'POST', url: '/dashboard/api/logout' }));
    await streamA.ended;
    assert.deepEqual(streamA.events.at(-1), {
      id: undefined,
      event: 'closed',
      data: JSON.stringify({ reason: 'session-ended' }),
    });
    const res = await gw.app.inject(
      as(b, {
        method: 'POST',
        url: '/dashboard/api/password',
        payload: { currentPassword: PASSWORD, newPassword: 'judy has a new password' },
      }),
    );
    assert.equal(res.statusCode, 200, res.body);
    await streamB.ended;
    assert.equal(streamB.events.at(-1)?.data, JSON.stringify({ reason: 'session-ended' }));
  });
});

async function logInAs(gw: DashboardApp, email: string, password: string): Promise<Browser> {
  const res = await gw.app.inject({
    method: 'POST',
    url: '/dashboard/api/login',
    payload: { email, password },
  });
  assert.equal(res.statusCode, 200, res.body);
  return {
    cookie: sessionCookieOf(res).split(';')[0] ?? '',
    csrf: res.json().csrfToken,
    accountId: res.json().accountId,
  };
}

describe('dashboard: sign-up switched off, and the CLI', () => {
  let gw: DashboardApp;
  before(async () => {
    gw = await startDashboardApp({ signup: false });
  });
  after(() => gw.close());

  it('refuses sign-up with 403 and says so in /config', async () => {
    const config = await gw.app.inject({ method: 'GET', url: '/dashboard/api/config' });
    assert.deepEqual(config.json(), { signupEnabled: false });
    const res = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/signup',
      payload: { email: 'new@example.test', password: PASSWORD },
    });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error.code, 'FORBIDDEN');
    assert.equal(await gw.store.dashboardUsers.findByEmail('new@example.test'), undefined);
  });

  it('lets an operator-made account log in once given a password, and a new password ends its sessions', async () => {
    const account = await gw.services.accounts.createAccount({ name: 'ops made', plan: 'premium' });
    await gw.auth.setPassword({ accountId: account.id, email: 'ops@example.test', password: PASSWORD });
    const login = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: 'ops@example.test', password: PASSWORD },
    });
    assert.equal(login.statusCode, 200);
    assert.equal(login.json().accountId, account.id);
    const cookie = sessionCookieOf(login).split(';')[0] ?? '';
    await gw.auth.setPassword({ accountId: account.id, password: 'a brand new password' });
    const old = await gw.app.inject({ method: 'GET', url: '/dashboard/api/session', headers: { cookie } });
    assert.equal(old.statusCode, 401);
  });

  it('gate402 dashboard set-password reads the password from stdin and never takes it as an argument', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gate402-dashboard-cli-'));
    const env = { ...process.env, DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '', LOG_LEVEL: 'silent' };
    try {
      const created = spawnSync(
        process.execPath,
        [...GATE402_COMMAND, 'accounts', 'create', '--name', 'cli', '--plan', 'standard', '--json'],
        {
          env,
          encoding: 'utf8',
        },
      );
      assert.equal(created.status, 0, created.stderr);
      const accountId = JSON.parse(created.stdout).id;
      const set = spawnSync(
        process.execPath,
        [
          ...GATE402_COMMAND,
          'dashboard',
          'set-password',
          '--account',
          accountId,
          '--email',
          'cli@example.test',
          '--json',
        ],
        { env, encoding: 'utf8', input: `${PASSWORD}\n` },
      );
      assert.equal(set.status, 0, set.stderr);
      assert.deepEqual(JSON.parse(set.stdout), { accountId, email: 'cli@example.test', created: true });
      assert.ok(!set.stdout.includes(PASSWORD));
      const short = spawnSync(
        process.execPath,
        [...GATE402_COMMAND, 'dashboard', 'set-password', '--account', accountId],
        {
          env,
          encoding: 'utf8',
          input: 'short\n',
        },
      );
      assert.equal(short.status, 1);
      assert.match(short.stderr, /password: must be 10 to 200 characters/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('dashboard: the page itself', () => {
  let gw: DashboardApp;
  let unbuilt: DashboardApp;
  let dist: string;
  before(async () => {
    dist = mkdtempSync(join(tmpdir(), 'gate402-dashboard-dist-'));
    mkdirSync(join(dist, 'assets'));
    writeFileSync(join(dist, 'index.html'), '<!doctype html><title>dash</title>');
    writeFileSync(join(dist, 'assets', 'app-1a2b.js'), 'console.log(1)');
    gw = await startDashboardApp({ distDir: dist });
    unbuilt = await startDashboardApp({ distDir: join(dist, 'missing') });
  });
  after(async () => {
    await gw.close();
    await unbuilt.close();
    rmSync(dist, { recursive: true, force: true });
  });

  it('serves index.html for /dashboard and its pages, with a strict Content-Security-Policy', async () => {
    for (const url of ['/dashboard', '/dashboard/', '/dashboard/keys', '/dashboard/payments/pay_1']) {
      const res = await gw.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.body, '<!doctype html><title>dash</title>');
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
      assert.equal(res.headers['cache-control'], 'no-cache');
      assert.match(String(res.headers['content-security-policy']), /default-src 'self'; script-src 'self'/);
      assert.equal(res.headers['x-frame-options'], 'DENY');
    }
  });

  it('serves hashed assets as immutable, and 404 for missing files and unknown API routes', async () => {
    const asset = await gw.app.inject({ method: 'GET', url: '/dashboard/assets/app-1a2b.js' });
    assert.equal(asset.statusCode, 200);
    assert.equal(asset.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.match(String(asset.headers['cache-control']), /immutable/);
    for (const url of ['/dashboard/assets/nope.js', '/dashboard/../package.json', '/dashboard/api/nope']) {
      const res = await gw.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.json().error.code, 'NOT_FOUND');
    }
  });

  it('says how to build the dashboard when it is not built', async () => {
    const res = await unbuilt.app.inject({ method: 'GET', url: '/dashboard' });
    assert.equal(res.statusCode, 503);
    assert.match(res.body, /npm install/);
  });
});
