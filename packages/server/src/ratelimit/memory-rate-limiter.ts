import { RATE_WINDOW_MS } from '../domain/plan.ts';
import {
  type Clock,
  decide,
  type RateLimitDecision,
  type RateLimiter,
  type RateLimitUsage,
  windowStart,
} from './rate-limiter.ts';

/** Counters in this process: right for a single instance (the embedded default). */
export class MemoryRateLimiter implements RateLimiter {
  private readonly counts = new Map<string, { window: number; count: number }>();
  private currentWindow = 0;

  constructor(
    private readonly clock: Clock = Date.now,
    private readonly windowMs: number = RATE_WINDOW_MS,
  ) {}

  async hit(subject: string, limit: number): Promise<RateLimitDecision> {
    return this.hitNow(subject, limit);
  }

  hitNow(subject: string, limit: number): RateLimitDecision {
    const now = this.clock();
    const window = this.enterWindow(now);
    const entry = this.counts.get(subject);
    const count = entry?.window === window ? entry.count + 1 : 1;
    this.counts.set(subject, { window, count });
    return decide(count, limit, window + this.windowMs, now);
  }

  async used(subject: string): Promise<RateLimitUsage> {
    const window = this.enterWindow(this.clock());
    const entry = this.counts.get(subject);
    return { used: entry?.window === window ? entry.count : 0, resetAt: window + this.windowMs };
  }

  async close(): Promise<void> {
    this.counts.clear();
  }

  /** Forgets the counters of past windows when a new window starts, so memory stays bounded. */
  private enterWindow(now: number): number {
    const window = windowStart(now, this.windowMs);
    if (window > this.currentWindow) {
      for (const [subject, entry] of this.counts) if (entry.window < window) this.counts.delete(subject);
      this.currentWindow = window;
    }
    return window;
  }
}
