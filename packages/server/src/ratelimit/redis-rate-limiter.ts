import { Redis } from 'ioredis';
import { RATE_WINDOW_MS } from '../domain/plan.ts';
import {
  type Clock,
  decide,
  type RateLimitDecision,
  type RateLimiter,
  type RateLimitUsage,
  windowStart,
} from './rate-limiter.ts';

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
    private readonly options: {
      clock?: Clock;
      windowMs?: number;
      keyPrefix?: string;
      /** Connection problems; they also surface as failed commands and in /readyz. */
      onError?: (error: Error) => void;
    } = {},
  ) {
    // While Redis is away a command waits for at most one reconnection and one second, so a request
    // gets a prompt 503 instead of hanging.
    // Named in Redis's CLIENT LIST by process, so an operator can tell which instance holds it.
    this.redis = new Redis(url, {
      maxRetriesPerRequest: 1,
      lazyConnect: true,
      commandTimeout: 1_000,
      connectionName: `gate402:${process.pid}:ratelimit`,
    });
    this.redis.on('error', (error: Error) => options.onError?.(error));
    this.redis.defineCommand('gate402RateHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  }

  async connect(): Promise<void> {
    await this.redis.connect();
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async hit(subject: string, limit: number): Promise<RateLimitDecision> {
    const now = this.now();
    const window = windowStart(now, this.windowMs);
    const redis = this.redis as Redis & { gate402RateHit(key: string, ttlMs: number): Promise<number> };
    const count = await redis.gate402RateHit(this.key(subject, window), this.windowMs * 2);
    return decide(count, limit, window + this.windowMs, now);
  }

  async used(subject: string): Promise<RateLimitUsage> {
    const window = windowStart(this.now(), this.windowMs);
    const count = await this.redis.get(this.key(subject, window));
    return { used: count === null ? 0 : Number(count), resetAt: window + this.windowMs };
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private get windowMs(): number {
    return this.options.windowMs ?? RATE_WINDOW_MS;
  }

  private now(): number {
    return (this.options.clock ?? Date.now)();
  }

  private key(subject: string, window: number): string {
    return `${this.options.keyPrefix ?? 'gate402:rl:'}${subject}:${window}`;
  }
}
