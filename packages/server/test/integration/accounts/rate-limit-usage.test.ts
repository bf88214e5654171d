import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.ts';
import type { RateLimiter } from '../../../src/ratelimit/rate-limiter.ts';
import { RedisRateLimiter } from '../../../src/ratelimit/redis-rate-limiter.ts';
import { REDIS_URL, SKIP_REDIS } from '../../support/databases.ts';

/** Mid-window, so the window cannot roll over during a test. */
const WINDOW_START = Date.UTC(2026, 0, 1, 12, 0, 0);
const clock = () => WINDOW_START + 30_000;

/** `used` (the dashboard's usage figure) reads the count `hit` keeps, without adding to it. */
async function checkUsage(limiter: RateLimiter) {
  const subject = `acct_${randomBytes(4).toString('hex')}`;
  assert.deepEqual(await limiter.used(subject), { used: 0, resetAt: WINDOW_START + 60_000 });
  await limiter.hit(subject, 100);
  await limiter.hit(subject, 100);
  assert.deepEqual(await limiter.used(subject), { used: 2, resetAt: WINDOW_START + 60_000 });
  assert.deepEqual(
    await limiter.used(subject),
    { used: 2, resetAt: WINDOW_START + 60_000 },
    'reading counts nothing',
  );
  assert.equal((await limiter.hit(subject, 100)).remaining, 97);
}

describe('rate limit usage', () => {
  it('in process', async () => {
    const limiter = new MemoryRateLimiter(clock);
    await checkUsage(limiter);
    await limiter.close();
  });

  it('in Redis', { skip: SKIP_REDIS }, async () => {
    const limiter = new RedisRateLimiter(REDIS_URL ?? '', {
      clock,
      keyPrefix: `gate402:test:${randomBytes(4).toString('hex')}:`,
    });
    await limiter.connect();
    try {
      await checkUsage(limiter);
    } finally {
      await limiter.close();
    }
  });
});
