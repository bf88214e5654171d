import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions } from 'fastify';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { type DashboardApp, startDashboardApp } from '../../support/dashboard-app.ts';
import { bearer } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/** A logged-in browser of one account: its session cookie and CSRF token. */
interface Browser {
  readonly cookie: string;
  readonly csrf: string;
  readonly accountId: string;
}

/**
 * Spend policies from the dashboard (the account owner's session): keys made with the admin scope, and
 * the account's and keys' policies read and set through the same service as the admin-scoped API, for
 * the session's own account only. The page itself is in packages/dashboard's browser suite.
 */
describe('dashboard API: admin keys and spend policies', () => {
  let chain: TestChain;
  let gw: DashboardApp;
  let owner: Browser;
  let other: Browser;
  let network: string;

  const signUp = async (email: string): Promise<Browser> => {
    const res = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/signup',
      payload: { email, password: 'correct horse battery' },
    });
    assert.equal(res.statusCode, 200, res.body);
    const header = res.headers['set-cookie'];
    const cookie = (Array.isArray(header) ? header[0] : header)?.split(';')[0] ?? '';
    return { cookie, csrf: res.json().csrfToken, accountId: res.json().accountId };
  };
  const call = (
    browser: Browser,
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    url: string,
    payload?: object,
  ) => {
    const options: InjectOptions = {
      method,
      url: `/dashboard/api${url}`,
      headers: { cookie: browser.cookie, 'x-csrf-token': browser.csrf },
    };
    if (payload !== undefined) options.payload = payload;
    return gw.app.inject(options);
  };

  before(async () => {
    chain = await startTestChain();
    gw = await startDashboardApp({ networks: new NetworkRegistry([chain.adapter]) });
    network = chain.adapter.info.id;
    owner = await signUp('owner@example.test');
    other = await signUp('other@example.test');
  });
  after(async () => {
    await gw.close();
    await chain.close();
  });

  it('makes an admin key only when asked, and shows each key’s scopes', async () => {
    const admin = await call(owner, 'POST', '/keys', { name: 'ops', admin: true });
    assert.equal(admin.statusCode, 200, admin.body);
    assert.deepEqual(admin.json().scopes, ['admin']);
    const plain = await call(owner, 'POST', '/keys', { name: 'agent' });
    assert.deepEqual(plain.json().scopes, []);
    // The admin key opens the admin-only API routes; the ordinary one does not.
    const asAdmin = await gw.app.inject({
      method: 'GET',
      url: '/spend-policies',
      headers: bearer(admin.json().key),
    });
    assert.equal(asAdmin.statusCode, 200, asAdmin.body);
    const asAgent = await gw.app.inject({
      method: 'GET',
      url: '/spend-policies',
      headers: bearer(plain.json().key),
    });
    assert.equal(asAgent.statusCode, 403);
    const listed = (await call(owner, 'GET', '/keys')).json().keys as { name: string; scopes: string[] }[];
    assert.deepEqual(
      listed.map((k) => [k.name, k.scopes]),
      [
        ['ops', ['admin']],
        ['agent', []],
      ],
    );
  });

  it("sets, lists and removes the account's and a key's policy; the key then reads what binds it", async () => {
    const agent = await call(owner, 'POST', '/keys', { name: 'agent 2' });
    const keyId: string = agent.json().id;
    const account = await call(owner, 'PUT', '/spend-policies/account', { allowedNetworks: [network] });
    assert.equal(account.statusCode, 200, account.body);
    const key = await call(owner, 'PUT', `/spend-policies/keys/${keyId}`, {
      limits: [{ network, asset: 'SOL', maxPerDay: '1.5' }],
    });
    assert.equal(key.statusCode, 200, key.body);
    assert.equal(key.json().limits[0].maxPerDay, '1.5');
    const list = (await call(owner, 'GET', '/spend-policies')).json().policies as { scope: string }[];
    assert.deepEqual(
      list.map((p) => p.scope),
      ['account', 'key'],
    );
    const own = await gw.app.inject({
      method: 'GET',
      url: '/spend-policy',
      headers: bearer(agent.json().key),
    });
    assert.deepEqual(
      own.json().policies.map((p: { scope: string }) => p.scope),
      ['account', 'key'],
    );
    assert.equal((await call(owner, 'DELETE', `/spend-policies/keys/${keyId}`)).statusCode, 200);
    assert.equal((await call(owner, 'DELETE', `/spend-policies/keys/${keyId}`)).statusCode, 404);
  });

  it("answers another account's key as not found, names a bad field, and needs the CSRF token", async () => {
    const agent = await call(owner, 'POST', '/keys', { name: 'agent 3' });
    const keyId: string = agent.json().id;
    const foreign = await call(other, 'PUT', `/spend-policies/keys/${keyId}`, { limits: [] });
    assert.equal(foreign.statusCode, 404, foreign.body);
    assert.equal((await call(other, 'DELETE', `/spend-policies/keys/${keyId}`)).statusCode, 404);
    const bad = await call(owner, 'PUT', '/spend-policies/account', {
      limits: [{ network, asset: 'SOL', maxPerPayment: '0.0000000001' }],
    });
    assert.equal(bad.statusCode, 400, bad.body);
    assert.ok('limits[0].maxPerPayment' in bad.json().error.details, bad.body);
    const noCsrf = await gw.app.inject({
      method: 'PUT',
      url: '/dashboard/api/spend-policies/account',
      headers: { cookie: owner.cookie },
      payload: { limits: [] },
    });
    assert.equal(noCsrf.statusCode, 403, noCsrf.body);
    const noSession = await gw.app.inject({ method: 'GET', url: '/dashboard/api/spend-policies' });
    assert.equal(noSession.statusCode, 401);
  });
});
