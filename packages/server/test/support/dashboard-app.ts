import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { NetworkRegistry } from '../../src/chains/network-registry.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { PlanAccess } from '../../src/domain/plan-access.ts';
import { createGateway, createLogger } from '../../src/gateway.ts';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.ts';
import type { DashboardAuthService } from '../../src/services/dashboard-auth/dashboard-auth-service.ts';
import type { GatewayServices } from '../../src/services/gateway-services.ts';
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
  const defaults = loadConfig({ ALLOW_PRIVATE_OUTBOUND_URLS: 'true' });
  const config: Config = {
    ...defaults,
    planAccess: options.planAccess ?? defaults.planAccess,
    trustProxy: options.trustProxy ?? false,
    dashboardSignup: options.signup ?? true,
    dashboardSessionHours: 1,
    dashboardLoginAttempts: options.loginAttempts ?? 10,
    ...options.limits,
  };
  // The limiter's clock stands still at start-up, so a test's attempts all fall in one fixed window
  // instead of sometimes straddling a minute boundary (a limit test would then see the count reset).
  const startedAt = Date.now();
  const gateway = await createGateway(config, {
    store,
    networks: options.networks ?? new NetworkRegistry([]),
    masterKey: new Uint8Array(randomBytes(32)),
    rateLimiter: new MemoryRateLimiter(() => startedAt),
    instanceId: 'dashboard-test',
    logger: createLogger({ logLevel: 'silent' }),
    httpLogger: null,
    services: { confirmTimeoutMs: 1_000, proofMaxAgeMs: 3_600_000, authCacheMs: 0 },
    dashboard: {
      distDir: options.distDir ?? '/nonexistent-dashboard-dist',
      ...(options.now === undefined ? {} : { now: options.now }),
      ...(options.sessionPurgeIntervalMs === undefined
        ? {}
        : { sessionPurgeIntervalMs: options.sessionPurgeIntervalMs }),
    },
    demoAccount: false,
    startFacilitator: false,
  });
  gateway.startJobs(['webhook-delivery', 'event-retention', 'dashboard-session-purge']);
  const { app, services, dashboardAuth } = gateway;
  if (dashboardAuth === undefined) throw new Error('the dashboard was asked for');
  return {
    app,
    store,
    services,
    auth: dashboardAuth,
    close: async () => {
      await gateway.close();
      await storage.dispose();
    },
  };
}
