import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions } from 'fastify';
import { loadConfig } from '../../../src/config.ts';
import { FEATURES } from '../../../src/domain/plan-access.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

function request(route: { method: string; url: string }, headers: Record<string, string>): InjectOptions {
  const method = route.method as InjectOptions['method'] & string;
  return method === 'GET' || method === 'DELETE'
    ? { method, url: route.url, headers }
    : { method, url: route.url, headers, payload: {} };
}

/**
 * The security suite applied to every authenticated route the app has, found through its OpenAPI
 * document: a route added by any later change is covered without anyone remembering to add it here.
 */
describe('every authenticated route', () => {
  let gw: TestGateway;
  let routes: { method: string; url: string; keyOptional: boolean }[];
  let revokedKey: string;
  let noAccessKey: string;

  before(async () => {
    // Standard may call nothing, so every route must answer 403 to a Standard key.
    const planAccess = loadConfig({
      PLAN_ACCESS: JSON.stringify({ standard: [], premium: FEATURES, enterprise: FEATURES }),
    }).planAccess;
    // With the event parts, so the webhook routes are covered too.
    gw = await startTestGateway({ planAccess, events: {} });
    const doc = gw.app.swagger() as { paths: Record<string, Record<string, { security?: unknown[] }>> };
    routes = Object.entries(doc.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, op]) => op.security !== undefined)
        .map(([method, op]) => ({
          method: method.toUpperCase(),
          url: path.replace(/\{[^}]+\}/g, 'x'),
          op,
          // `{}` among the alternatives: the route also answers without a key (the x402 bazaar listing).
          keyOptional: (op.security ?? []).some((s) => Object.keys(s as object).length === 0),
        })),
    );
    const revoked = await gw.newCaller('premium');
    const [record] = await gw.accounts.listKeys(revoked.accountId);
    assert.ok(record);
    await gw.accounts.revokeKey(record.id);
    revokedKey = revoked.key;
    noAccessKey = (await gw.newCaller('standard')).key;
  });
  after(() => gw.close());

  it('includes at least GET /account and PATCH /wallets/{address}', () => {
    assert.ok(routes.some((r) => r.method === 'GET' && r.url === '/account'));
    assert.ok(routes.some((r) => r.method === 'PATCH' && r.url === '/wallets/x'));
  });

  it('opens no route to callers without a key but the x402 bazaar listing and search', () => {
    assert.deepEqual(
      routes.filter((r) => r.keyOptional).map((r) => `${r.method} ${r.url}`),
      ['GET /facilitator/discovery/resources', 'GET /facilitator/discovery/search'],
    );
  });

  it('answers 401 without a key (unless the route is open without one), with a revoked key, and with garbage', async () => {
    for (const route of routes) {
      const asked = [bearer(revokedKey), { authorization: 'Bearer ../../etc/passwd' }];
      for (const headers of route.keyOptional ? asked : [{}, ...asked]) {
        const res = await gw.app.inject(request(route, headers));
        assert.equal(res.statusCode, 401, `${route.method} ${route.url}`);
        assert.equal(res.json().error.code, 'UNAUTHORIZED');
      }
    }
  });

  it('answers 403 when the plan does not include the route', async () => {
    for (const route of routes) {
      const res = await gw.app.inject(request(route, bearer(noAccessKey)));
      assert.equal(res.statusCode, 403, `${route.method} ${route.url}`);
      assert.equal(res.json().error.code, 'FORBIDDEN');
    }
  });
});
