import { Redis } from 'ioredis';
import { RATE_WINDOW_MS } from '../domain/plan.ts';
import { decide, type RateLimitDecision, type RateLimiter, windowStart } from './rate-limiter.ts';

/** Increments the window's counter and sets its expiry on first use, atomically. */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`;

/**
 * Counters in Redis, shared by every instance pointed at the same Redis. Keys are
 * `gate402:rl:<subject>:<window start>` and expire shortly after their window ends.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly windowMs: number = RATE_WINDOW_MS,
    private readonly keyPrefix = 'gate402:rl:',
  ) {
    // Fail fast instead of queueing commands while Redis is away: a request is better answered with
    // an error than held. enableOfflineQueue stays on during the first connect so start-up can wait.
    this.redis = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
    this.redis.defineCommand('gate402RateHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  }

  async connect(): Promise<void> {
    await this.redis.connect();
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async hit(subject: string, limit: number, now: number = Date.now()): Promise<RateLimitDecision> {
    const window = windowStart(now, this.windowMs);
    const redis = this.redis as Redis & { gate402RateHit(key: string, ttlMs: number): Promise<number> };
    const count = await redis.gate402RateHit(this.key(subject, window), this.windowMs * 2);
    return decide(count, limit, window + this.windowMs);
  }

  async peek(subject: string, limit: number, now: number = Date.now()): Promise<RateLimitDecision> {
    const window = windowStart(now, this.windowMs);
    const count = Number((await this.redis.get(this.key(subject, window))) ?? 0);
    return decide(count, limit, window + this.windowMs);
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private key(subject: string, window: number): string {
    return `${this.keyPrefix}${subject}:${window}`;
  }
}
