import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { type Config, loadConfig } from '../../../src/config.ts';
import { DEFAULT_PLAN_ACCESS, type PlanAccess } from '../../../src/domain/plan-access.ts';
import { createGateway, createLogger, fullestPlan, type GatewayOverrides } from '../../../src/gateway.ts';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.ts';
import { openStore } from '../../../src/store/open-store.ts';
import { tempSqlite } from '../../support/databases.ts';

/** A gateway on fresh storage with the demo account asked for, as `gate402 serve` builds it. */
async function firstStart(config: Partial<Config>, overrides: GatewayOverrides = {}) {
  const storage = tempSqlite();
  const { store } = await openStore(storage.location);
  const gateway = await createGateway(
    { ...loadConfig({}), ...config },
    {
      store,
      networks: new NetworkRegistry([]),
      masterKey: new Uint8Array(randomBytes(32)),
      rateLimiter: new MemoryRateLimiter(),
      logger: createLogger({ logLevel: 'silent' }),
      httpLogger: null,
      startFacilitator: false,
      events: false,
      demoAccount: true,
      ...overrides,
    },
  );
  return {
    gateway,
    close: async () => {
      await gateway.close();
      storage.dispose();
    },
  };
}

describe('the demo account', () => {
  it('is on the plan granting the most features: Enterprise with the default table', () => {
    assert.equal(fullestPlan(DEFAULT_PLAN_ACCESS), 'enterprise');
    const premiumOnly: PlanAccess = {
      standard: new Set(['account']),
      premium: new Set(['account', 'stream', 'webhooks']),
      enterprise: new Set(['account', 'stream']),
    };
    assert.equal(fullestPlan(premiumOnly), 'premium');
  });

  it('gets a dashboard log-in stored hashed, that logs in to the same account', async () => {
    const { gateway, close } = await firstStart({}, { dashboard: { distDir: '/nonexistent' } });
    try {
      const demo = gateway.demo;
      assert.ok(demo !== undefined);
      assert.equal(demo.plan, 'enterprise');
      const login = demo.dashboardLogin;
      assert.ok(login !== undefined);
      const user = await gateway.store.dashboardUsers.findByEmail(login.email);
      assert.equal(user?.accountId, demo.accountId);
      assert.ok(!user.passwordHash.includes(login.password), 'only a hash is stored');
      const res = await gateway.app.inject({
        method: 'POST',
        url: '/dashboard/api/login',
        payload: { email: login.email, password: login.password },
      });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().accountId, demo.accountId);
      const account = await gateway.app.inject({
        method: 'GET',
        url: '/account',
        headers: { authorization: `Bearer ${demo.key}` },
      });
      assert.equal(account.json().plan, 'enterprise');
      assert.equal(account.json().rateLimit.limit, 1000);
    } finally {
      await close();
    }
  });

  it('follows a narrower PLAN_ACCESS, and has no dashboard log-in when the dashboard is off', async () => {
    const planAccess: PlanAccess = {
      standard: new Set(['account']),
      premium: new Set(['account', 'payments']),
      enterprise: new Set(['account']),
    };
    const { gateway, close } = await firstStart({ planAccess }, { dashboard: false });
    try {
      assert.equal(gateway.demo?.plan, 'premium');
      assert.equal(gateway.demo?.dashboardLogin, undefined);
      assert.equal(await gateway.store.dashboardUsers.findByAccount(gateway.demo.accountId), undefined);
    } finally {
      await close();
    }
  });

  it('is not made when storage already has an account', async () => {
    const storage = tempSqlite();
    const { store } = await openStore(storage.location);
    const overrides: GatewayOverrides = {
      networks: new NetworkRegistry([]),
      masterKey: new Uint8Array(randomBytes(32)),
      rateLimiter: new MemoryRateLimiter(),
      logger: createLogger({ logLevel: 'silent' }),
      httpLogger: null,
      startFacilitator: false,
      events: false,
      dashboard: false,
      demoAccount: true,
    };
    const first = await createGateway(loadConfig({}), { ...overrides, store });
    assert.ok(first.demo !== undefined);
    await first.close();
    const again = await openStore(storage.location);
    const second = await createGateway(loadConfig({}), { ...overrides, store: again.store });
    try {
      assert.equal(second.demo, undefined);
      assert.equal(await second.store.accounts.count(), 1);
    } finally {
      await second.close();
      storage.dispose();
    }
  });
});
