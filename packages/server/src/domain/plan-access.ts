import type { Plan } from './plan.ts';

/**
 * Features are what plans grant access to; every authenticated route names the one it belongs to.
 * Adding a route means naming its feature, so no route can be reached outside the plan table.
 */
export const FEATURES = [
  'account',
  'payments',
  'transactions',
  'status',
  'history',
  'verification',
  'tokens',
  'portfolio',
  'networks',
  'wallets',
  'faucet',
  'stream',
  'webhooks',
  'facilitator',
  'mcp',
] as const;
export type Feature = (typeof FEATURES)[number];

export type PlanAccess = Readonly<Record<Plan, ReadonlySet<Feature>>>;

const PAID_PLANS_ONLY: readonly Feature[] = ['stream', 'webhooks', 'facilitator'];
const EVERY_PLAN: readonly Feature[] = FEATURES.filter((f) => !PAID_PLANS_ONLY.includes(f));

/**
 * Default table: every plan calls the payment, transaction, status, history, verification, token and
 * portfolio endpoints and /mcp (whose tools also need the features of the endpoints they call); the
 * WebSocket stream, webhooks and the x402 facilitator need Premium or Enterprise.
 * Operators replace it with the PLAN_ACCESS setting (see README).
 */
export const DEFAULT_PLAN_ACCESS: PlanAccess = {
  standard: new Set(EVERY_PLAN),
  premium: new Set([...EVERY_PLAN, ...PAID_PLANS_ONLY]),
  enterprise: new Set([...EVERY_PLAN, ...PAID_PLANS_ONLY]),
};

export function isFeature(value: string): value is Feature {
  return (FEATURES as readonly string[]).includes(value);
}
