import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { NetworkRegistry } from '../../src/chains/network-registry.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { PlanAccess } from '../../src/domain/plan-access.ts';
import { createPaymentEvents } from '../../src/events/payment-events.ts';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.ts';
import { DashboardAuthService } from '../../src/services/dashboard/dashboard-auth-service.ts';
import { createServices, type GatewayServices } from '../../src/services/gateway-services.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { Store } from '../../src/store/store.ts';
import { tempSqlite } from './databases.ts';

export interface DashboardApp {
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly services: GatewayServices;
  readonly auth: DashboardAuthService;
  close(): Promise<void>;
}

/**
 * The real app with the dashboard on a real SQLite file, driven through app.inject(); no chains unless
 * `networks` names some. Webhook URLs may point at loopback here (ALLOW_PRIVATE_OUTBOUND_URLS), so no test needs DNS.
 */
export async function startDashboardApp(
  options: {
    signup?: boolean;
    loginAttempts?: number;
    distDir?: string;
    trustProxy?: Config['trustProxy'];
    /** The dashboard's clock (sessions' expiry); the rate limiter keeps its own, standing still. */
    now?: () => number;
    sessionPurgeIntervalMs?: number;
    /** Chains the gateway talks to; none by default. */
    networks?: NetworkRegistry;
    /** The plan table (PLAN_ACCESS); the default one unless given. */
    planAccess?: PlanAccess;
    /** The HTTP server's timeouts and caps; the defaults unless given. */
    limits?: Partial<
      Pick<
        Config,
        'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnectionsPerAddress' | 'streamMaxUnauthenticated'
      >
    >;
  } = {},
): Promise<DashboardApp> {
  const storage = tempSqlite();
  const { store } = await openStore(storage.location);
  const networks = options.networks ?? new NetworkRegistry([]);
  const masterKey = new Uint8Array(randomBytes(32));
  const services = createServices({
    store,
    networks,
    masterKey,
    instanceId: 'dashboard-test',
    confirmTimeoutMs: 1_000,
    proofMaxAgeMs: 3_600_000,
  });
  const defaults = loadConfig({ ALLOW_PRIVATE_OUTBOUND_URLS: 'true' });
  const events = await createPaymentEvents({
    store,
    masterKey,
    instanceId: 'dashboard-test',
    config: defaults,
  });
  await events.start();
  // The limiter's clock stands still at start-up, so a test's attempts all fall in one fixed window
  // instead of sometimes straddling a minute boundary (a limit test would then see the count reset).
  const startedAt = Date.now();
  const rateLimiter = new MemoryRateLimiter(() => startedAt);
  const auth = new DashboardAuthService(store, rateLimiter, {
    signupEnabled: options.signup ?? true,
    sessionTtlMs: 3_600_000,
    loginAttemptsPerMinute: options.loginAttempts ?? 10,
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(options.sessionPurgeIntervalMs === undefined
      ? {}
      : { sessionPurgeIntervalMs: options.sessionPurgeIntervalMs }),
  });
  const app = await buildApp({
    config: {
      bodyLimitBytes: defaults.bodyLimitBytes,
      planAccess: options.planAccess ?? defaults.planAccess,
      trustProxy: options.trustProxy ?? false,
      ...options.limits,
    },
    store,
    services,
    rateLimiter,
    networks,
    readiness: [],
    events,
    dashboard: { auth, distDir: options.distDir ?? '/nonexistent-dashboard-dist' },
  });
  await app.ready();
  return {
    app,
    store,
    services,
    auth,
    close: async () => {
      await app.close();
      await events.close();
      await rateLimiter.close();
      await store.close();
      await storage.dispose();
    },
  };
}
