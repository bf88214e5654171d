/**
 * Counts requests per account in fixed one-minute windows (aligned to the Unix minute), so every
 * instance that shares the counter store agrees on the window and on the count.
 */
export interface RateLimiter {
  /** Counts one request of `subject` and says whether it is within `limit` for the current window. */
  hit(subject: string, limit: number): Promise<RateLimitDecision>;
  /**
   * The same as `hit`, answered at once, for a limiter whose counters live in this process; absent when
   * counting needs a round trip (Redis). Lets the authentication hook finish without a promise.
   */
  readonly hitNow?: (subject: string, limit: number) => RateLimitDecision;
  /** How many requests of `subject` the current window has counted, without counting one (the dashboard). */
  used(subject: string): Promise<RateLimitUsage>;
  close(): Promise<void>;
}

export interface RateLimitDecision {
  readonly allowed: boolean;
  readonly limit: number;
  /** Requests left in the window after this one (never negative). */
  readonly remaining: number;
  /** Unix ms when the window ends and the count starts again. */
  readonly resetAt: number;
  /** Whole seconds until then, at least 1: a client that waits this long is in the next window. */
  readonly resetSeconds: number;
}

export interface RateLimitUsage {
  readonly used: number;
  /** Unix ms when the window ends and the count starts again. */
  readonly resetAt: number;
}

/** Where a limiter reads the time; tests pin it so a window cannot roll over mid-test. */
export type Clock = () => number;

export function windowStart(now: number, windowMs: number): number {
  return now - (now % windowMs);
}

export function decide(count: number, limit: number, resetAt: number, now: number): RateLimitDecision {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetAt,
    resetSeconds: Math.max(1, Math.ceil((resetAt - now) / 1000)),
  };
}
