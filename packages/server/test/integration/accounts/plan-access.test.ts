import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../../src/config.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/** Routes added here stand in for the plan-gated endpoints of later issues (stream, webhooks, facilitator). */
function gatedRoutes(app: FastifyInstance) {
  app.get('/test/webhooks', { config: { feature: 'webhooks' } }, async () => ({ ok: true }));
  app.get('/test/payments', { config: { feature: 'payments' } }, async () => ({ ok: true }));
}

describe('plans and endpoint access (spec §5.3, §8)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ extraRoutes: gatedRoutes });
  });
  after(() => gw.close());

  it('answers 403 FORBIDDEN when the plan does not include the endpoint', async () => {
    const standard = await gw.newCaller('standard');
    const res = await gw.app.inject({ method: 'GET', url: '/test/webhooks', headers: bearer(standard.key) });
    assert.equal(res.statusCode, 403);
    assert.deepEqual(res.json().error.code, 'FORBIDDEN');
    assert.equal(res.json().error.message, 'The standard plan does not include webhooks.');
    assert.ok(res.headers.ratelimit, 'the refused request was still counted');
  });

  it('lets Premium and Enterprise call what Standard may not, and every plan call payments', async () => {
    const premium = await gw.newCaller('premium');
    const enterprise = await gw.newCaller('enterprise', 5_000);
    const standard = await gw.newCaller('standard');
    for (const caller of [premium, enterprise]) {
      const res = await gw.app.inject({ method: 'GET', url: '/test/webhooks', headers: bearer(caller.key) });
      assert.equal(res.statusCode, 200);
    }
    for (const caller of [standard, premium, enterprise]) {
      const res = await gw.app.inject({ method: 'GET', url: '/test/payments', headers: bearer(caller.key) });
      assert.equal(res.statusCode, 200);
    }
  });

  it('follows the PLAN_ACCESS table from configuration', async () => {
    const planAccess = loadConfig({
      PLAN_ACCESS: JSON.stringify({
        standard: ['account'],
        premium: ['account', 'payments'],
        enterprise: ['account'],
      }),
    }).planAccess;
    const custom = await startTestGateway({ planAccess, extraRoutes: gatedRoutes });
    try {
      const standard = await custom.newCaller('standard');
      const premium = await custom.newCaller('premium');
      const denied = await custom.app.inject({
        method: 'GET',
        url: '/test/payments',
        headers: bearer(standard.key),
      });
      assert.equal(denied.statusCode, 403);
      const allowed = await custom.app.inject({
        method: 'GET',
        url: '/test/payments',
        headers: bearer(premium.key),
      });
      assert.equal(allowed.statusCode, 200);
    } finally {
      await custom.close();
    }
  });

  it('changes what a key may do as soon as its account changes plan', async () => {
    const caller = await gw.newCaller('standard');
    await gw.accounts.setPlan(caller.accountId, { plan: 'premium' });
    const res = await gw.app.inject({ method: 'GET', url: '/test/webhooks', headers: bearer(caller.key) });
    assert.equal(res.statusCode, 200);
    const account = await gw.app.inject({ method: 'GET', url: '/account', headers: bearer(caller.key) });
    assert.equal(account.json().plan, 'premium');
    assert.equal(account.json().rateLimit.limit, 1000);
  });
});
