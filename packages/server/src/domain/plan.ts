/** The plans of spec §2.6 and §8. */
export const PLANS = ['standard', 'premium', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

export function isPlan(value: string): value is Plan {
  return (PLANS as readonly string[]).includes(value);
}

/** Requests per minute of the fixed plans (spec §8). Enterprise carries its own number per account. */
export const PLAN_RATE_LIMITS: Readonly<Record<Exclude<Plan, 'enterprise'>, number>> = {
  standard: 100,
  premium: 1_000,
};

/** Upper bound on an enterprise account's custom rate, to keep counters and headers sane. */
export const MAX_RATE_LIMIT_PER_MINUTE = 1_000_000;

/** The rate window of every plan, in milliseconds. */
export const RATE_WINDOW_MS = 60_000;

export function rateLimitOf(plan: Plan, customRateLimit: number | null): number {
  if (plan === 'enterprise') {
    if (customRateLimit === null) throw new Error('an enterprise account must carry its own rate limit');
    return customRateLimit;
  }
  return PLAN_RATE_LIMITS[plan];
}
