import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.ts';
import { RedisRateLimiter } from '../../../src/ratelimit/redis-rate-limiter.ts';
import { REDIS_URL, SKIP_REDIS, tempSqlite } from '../../support/databases.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/** 12.5 s into a minute: every request of a test falls in one window, 48 s before it resets. */
const PINNED_NOW = Date.UTC(2026, 10, 22, 12, 0, 12, 500);
const pinnedClock = () => PINNED_NOW;

async function getAccount(gw: TestGateway, key: string) {
  return gw.app.inject({ method: 'GET', url: '/account', headers: bearer(key) });
}

async function spend(gw: TestGateway, key: string, requests: number): Promise<void> {
  for (let i = 0; i < requests; i++) {
    const res = await getAccount(gw, key);
    assert.equal(res.statusCode, 200, `request ${i + 1} of ${requests} was refused: ${res.body}`);
  }
}

function assertRateLimited(res: Awaited<ReturnType<typeof getAccount>>, policy: string, limit: number) {
  assert.equal(res.statusCode, 429);
  const body = res.json();
  assert.equal(body.success, false);
  assert.equal(body.error.code, 'RATE_LIMIT_EXCEEDED');
  assert.equal(body.error.retryAfter, 48);
  assert.equal(body.error.message, `Rate limit of ${limit} requests per minute exceeded; retry in 48 s.`);
  assert.equal(res.headers['retry-after'], '48');
  assert.equal(res.headers['ratelimit-policy'], `"${policy}";q=${limit};w=60`);
  assert.equal(res.headers.ratelimit, `"${policy}";r=0;t=48`);
}

describe('rate limits (spec §8)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ rateLimiter: new MemoryRateLimiter(pinnedClock) });
  });
  after(() => gw.close());

  it('lets Standard make 100 requests a minute and refuses the 101st with every field', async () => {
    const caller = await gw.newCaller('standard');
    const first = await getAccount(gw, caller.key);
    assert.equal(first.headers['ratelimit-policy'], '"standard";q=100;w=60');
    assert.equal(first.headers.ratelimit, '"standard";r=99;t=48');
    assert.deepEqual(first.json().rateLimit, {
      limit: 100,
      remaining: 99,
      windowSeconds: 60,
      resetAt: Date.UTC(2026, 10, 22, 12, 1, 0),
    });
    await spend(gw, caller.key, 99);
    assertRateLimited(await getAccount(gw, caller.key), 'standard', 100);
  });

  it('counts per account over all its keys, so extra keys do not multiply the limit', async () => {
    const caller = await gw.newCaller('standard');
    const { key: second } = await gw.accounts.createKey(caller.accountId, 'second');
    await spend(gw, caller.key, 50);
    await spend(gw, second, 50);
    assertRateLimited(await getAccount(gw, second), 'standard', 100);
    assertRateLimited(await getAccount(gw, caller.key), 'standard', 100);
  });

  it('keeps accounts apart: one account at its limit does not slow another', async () => {
    const busy = await gw.newCaller('standard');
    const calm = await gw.newCaller('standard');
    await spend(gw, busy.key, 100);
    assertRateLimited(await getAccount(gw, busy.key), 'standard', 100);
    const res = await getAccount(gw, calm.key);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().rateLimit.remaining, 99);
  });

  it('lets Premium make 1,000 requests a minute', async () => {
    const caller = await gw.newCaller('premium');
    await spend(gw, caller.key, 1_000);
    assertRateLimited(await getAccount(gw, caller.key), 'premium', 1_000);
  });

  it('gives Enterprise its own number', async () => {
    const caller = await gw.newCaller('enterprise', 7);
    await spend(gw, caller.key, 7);
    assertRateLimited(await getAccount(gw, caller.key), 'enterprise', 7);
  });

  it('starts counting again in the next window', async () => {
    let now = PINNED_NOW;
    const rolling = await startTestGateway({ rateLimiter: new MemoryRateLimiter(() => now) });
    try {
      const caller = await rolling.newCaller('enterprise', 2);
      await spend(rolling, caller.key, 2);
      assert.equal((await getAccount(rolling, caller.key)).statusCode, 429);
      now += 48_000;
      const res = await getAccount(rolling, caller.key);
      assert.equal(res.statusCode, 200);
      assert.equal(res.json().rateLimit.remaining, 1);
    } finally {
      await rolling.close();
    }
  });
});

describe('rate limits shared through Redis', { skip: SKIP_REDIS }, () => {
  it('two gateway instances on one Redis and one storage share one count', async () => {
    const keyPrefix = `gate402:test:${randomBytes(4).toString('hex')}:`;
    const redisLimiter = () => new RedisRateLimiter(REDIS_URL ?? '', { clock: pinnedClock, keyPrefix });
    const storage = tempSqlite();
    const a = await startTestGateway({ storage, rateLimiter: redisLimiter(), disposeStorage: false });
    const b = await startTestGateway({ storage, rateLimiter: redisLimiter() });
    try {
      const caller = await a.newCaller('standard');
      await spend(a, caller.key, 60);
      await spend(b, caller.key, 40);
      assertRateLimited(await getAccount(a, caller.key), 'standard', 100);
      assertRateLimited(await getAccount(b, caller.key), 'standard', 100);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('answers 503 with retryAfter, not 500 or a hang, when Redis cannot be reached', async () => {
    // Nothing listens on port 1: every command fails at once.
    const gw = await startTestGateway({ rateLimiter: new RedisRateLimiter('redis://127.0.0.1:1') });
    try {
      const caller = await gw.newCaller('standard');
      const res = await getAccount(gw, caller.key);
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().error.code, 'SERVICE_UNAVAILABLE');
      assert.equal(res.json().error.retryAfter, 1);
      assert.equal(res.headers['retry-after'], '1');
    } finally {
      await gw.close();
    }
  });
});
