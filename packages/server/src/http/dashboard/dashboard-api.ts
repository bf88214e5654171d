import type { FastifyInstance } from 'fastify';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import type { PaymentEvents } from '../../events/payment-events.ts';
import type { RateLimiter } from '../../ratelimit/rate-limiter.ts';
import type { AccessPolicy } from '../../services/accounts/access-policy.ts';
import type { DashboardAuthService } from '../../services/dashboard-auth/dashboard-auth-service.ts';
import type { GatewayServices } from '../../services/gateway-services.ts';
import type { Store } from '../../store/store.ts';
import type { Door } from '../doors.ts';
import { dashboardAccountRoutes } from './dashboard-account-routes.ts';
import { dashboardAuthRoutes } from './dashboard-auth-routes.ts';
import { installDashboardDoors } from './dashboard-doors.ts';
import { dashboardExportRoutes } from './dashboard-export-routes.ts';
import { dashboardLivePayments } from './dashboard-live-payments.ts';
import { dashboardPaymentRoutes } from './dashboard-payment-routes.ts';
import { installDashboardSession } from './dashboard-session.ts';
import { dashboardSpendPolicyRoutes } from './dashboard-spend-policy-routes.ts';
import { dashboardWalletRoutes } from './dashboard-wallet-routes.ts';
import { dashboardWebhookRoutes } from './dashboard-webhook-routes.ts';
import { LiveStreamRegistry } from './live-stream-registry.ts';

export const DASHBOARD_API_PREFIX = '/dashboard/api';

export interface DashboardApiDeps {
  readonly auth: DashboardAuthService;
  readonly services: GatewayServices;
  /** Dashboard idempotency keys (dashboard-idempotency.ts). */
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly rateLimiter: RateLimiter;
  /** The access policy the API asks too: a dashboard route of a feature needs the plan to grant it. */
  readonly policy: AccessPolicy;
  /** Each dashboard route is added here with its door (see doors.ts). */
  readonly doors: Door[];
  readonly events: PaymentEvents | undefined;
}

/**
 * The JSON API the dashboard page calls, under /dashboard/api, authenticated by the session cookie and
 * a CSRF token instead of an API key (no key ever sits in the browser). Each route delegates to the
 * same service the public API uses, behind the same plan table (dashboard-doors.ts). Registered with a prefix, so the session hook guards these routes
 * only. Not in the OpenAPI document: it is the dashboard's own, not a public interface.
 */
export async function dashboardApi(app: FastifyInstance, deps: DashboardApiDeps) {
  // Every answer here is one user's (a new key or signing secret shown once, the CSRF token, payments):
  // no browser or proxy cache may keep it. Before the session guard, so its refusals say so too.
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
  });
  installDashboardSession(app, deps.auth);
  installDashboardDoors(app, DASHBOARD_API_PREFIX, deps.policy, deps.doors);
  const { services } = deps;
  const streams = new LiveStreamRegistry();
  await app.register(dashboardAuthRoutes, { auth: deps.auth, streams });
  await app.register(dashboardAccountRoutes, {
    accounts: services.accounts,
    rateLimiter: deps.rateLimiter,
    summary: services.summary,
  });
  await app.register(dashboardSpendPolicyRoutes, { spendPolicies: services.spendPolicies });
  await app.register(dashboardWalletRoutes, {
    wallets: services.wallets,
    faucet: services.faucet,
    networks: deps.networks,
  });
  await app.register(dashboardPaymentRoutes, {
    query: services.query,
    refunds: services.refunds,
    store: deps.store,
  });
  await app.register(dashboardExportRoutes, { exports: services.exports });
  if (deps.events !== undefined) {
    await app.register(dashboardLivePayments, {
      hub: deps.events.hub,
      auth: deps.auth,
      policy: deps.policy,
      streams,
    });
    await app.register(dashboardWebhookRoutes, { webhooks: deps.events.webhooks });
  }
}
