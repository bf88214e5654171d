import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { NetworkRegistry } from '../../src/chains/network-registry.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { PlanAccess } from '../../src/domain/plan-access.ts';
import type { PaymentEvents, PaymentEventsConfig } from '../../src/events/payment-events.ts';
import { createGateway, createLogger, type Gateway } from '../../src/gateway.ts';
import type { ReadinessCheck } from '../../src/http/routes/health.ts';
import type { TlsFiles } from '../../src/http/tls/tls-credentials.ts';
import type { GatewayMetrics } from '../../src/metrics/gateway-metrics.ts';
import { MemoryRateLimiter } from '../../src/ratelimit/memory-rate-limiter.ts';
import type { RateLimiter } from '../../src/ratelimit/rate-limiter.ts';
import type { AccountService } from '../../src/services/accounts/account-service.ts';
import type { DiscoverySettings } from '../../src/services/facilitator/discovery-catalogue.ts';
import type { FeeBudgetSettings } from '../../src/services/facilitator/fee-budget.ts';
import type { GatewayServices } from '../../src/services/gateway-services.ts';
import { openStore } from '../../src/store/open-store.ts';
import type { Store } from '../../src/store/store.ts';
import { type TempStorage, tempSqlite } from './databases.ts';

export interface TestGateway {
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly services: GatewayServices;
  readonly networks: NetworkRegistry;
  readonly accounts: AccountService;
  readonly masterKey: Uint8Array;
  /** The stream and webhooks, when the gateway was started with `events`. */
  readonly events: PaymentEvents | undefined;
  /** The whole gateway, for what goes beyond the app: `listen()` (on a free port), `reloadTls()`. */
  readonly gateway: Gateway;
  /** Creates an account with one key and returns both; the key is the secret. */
  newCaller(
    plan?: 'standard' | 'premium' | 'enterprise',
    rateLimit?: number,
  ): Promise<{ accountId: string; key: string }>;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  readonly storage?: TempStorage;
  /** False when another gateway shares the storage and removes it. Default true. */
  readonly disposeStorage?: boolean;
  readonly rateLimiter?: RateLimiter;
  /** Chains the gateway talks to; none by default. */
  readonly networks?: NetworkRegistry;
  /** Share one with another gateway to share custodial wallets and proof keys. Default: a fresh one. */
  readonly masterKey?: Uint8Array;
  readonly confirmTimeoutMs?: number;
  readonly authCacheMs?: number;
  /** The services' clock. */
  readonly now?: () => number;
  readonly proofMaxAgeMs?: number;
  /** Let facilitatorUrl reach loopback and private addresses (ALLOW_PRIVATE_OUTBOUND_URLS). Default false. */
  readonly allowPrivateOutboundUrls?: boolean;
  readonly planAccess?: PlanAccess;
  readonly bodyLimitBytes?: number;
  readonly logger?: FastifyBaseLogger;
  /** Serve the payment stream and webhooks; settings default as in production unless given. */
  readonly events?: {
    readonly config?: Partial<PaymentEventsConfig>;
    readonly redisChannel?: string;
    readonly authTimeoutMs?: number;
  };
  /** Serve /metrics behind `token`, counting into `registry` (HTTP, confirmations, webhooks, 429s). */
  readonly metrics?: { readonly registry: GatewayMetrics; readonly token: string };
  /** Asked by /readyz after storage, e.g. each chain's ping. */
  readonly readiness?: readonly ReadinessCheck[];
  /** The x402 facilitator's fee budgets and minimum settle amounts (X402_FEE_BUDGET, X402_MIN_SETTLE_AMOUNT). */
  readonly feeBudget?: FeeBudgetSettings;
  /** The x402 bazaar catalogue's public listing and bound (X402_DISCOVERY_PUBLIC, X402_DISCOVERY_MAX_PER_ACCOUNT). */
  readonly discovery?: DiscoverySettings;
  /** Routes a test adds before the app is sealed, e.g. one that throws. */
  readonly extraRoutes?: (app: FastifyInstance) => void;
  /** REQUEST_TIMEOUT_MS: time to send a whole request (and, with TLS, to finish the handshake). */
  readonly requestTimeoutMs?: number;
  /** Serve HTTPS with these files (TLS_CERT_FILE, TLS_KEY_FILE, TLS_CA_FILE) once `gateway.listen()`. */
  readonly tls?: TlsFiles;
}

/** The real app on a real SQLite file (or the storage given), driven through app.inject(). */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const storage = options.storage ?? tempSqlite();
  const { store } = await openStore(storage.location);
  const defaults = loadConfig({});
  const config: Config = {
    ...defaults,
    ...options.events?.config,
    bodyLimitBytes: options.bodyLimitBytes ?? defaults.bodyLimitBytes,
    planAccess: options.planAccess ?? defaults.planAccess,
    trustProxy: false,
    // `gateway.listen()` takes a free port; app.inject() never listens.
    port: 0,
    requestTimeoutMs: options.requestTimeoutMs ?? defaults.requestTimeoutMs,
    ...(options.tls === undefined
      ? {}
      : {
          tlsCertFile: options.tls.certFile,
          tlsKeyFile: options.tls.keyFile,
          tlsCaFile: options.tls.caFile,
        }),
    ...(options.metrics === undefined ? {} : { metricsToken: options.metrics.token }),
  };
  const gateway = await createGateway(config, {
    store,
    networks: options.networks ?? new NetworkRegistry([]),
    masterKey: options.masterKey ?? new Uint8Array(randomBytes(32)),
    rateLimiter: options.rateLimiter ?? new MemoryRateLimiter(),
    instanceId: `test-${randomBytes(3).toString('hex')}`,
    logger: createLogger({ logLevel: 'silent' }),
    httpLogger: options.logger ?? null,
    services: {
      confirmTimeoutMs: options.confirmTimeoutMs ?? 10_000,
      proofMaxAgeMs: options.proofMaxAgeMs ?? 3_600_000,
      authCacheMs: options.authCacheMs ?? 0,
      outbound: { allowPrivate: options.allowPrivateOutboundUrls ?? false },
      ...(options.now === undefined ? {} : { now: options.now }),
      ...(options.feeBudget === undefined ? {} : { feeBudget: options.feeBudget }),
      ...(options.discovery === undefined ? {} : { discovery: options.discovery }),
    },
    events:
      options.events === undefined
        ? false
        : {
            ...(options.events.redisChannel === undefined
              ? {}
              : { redisChannel: options.events.redisChannel }),
            ...(options.events.authTimeoutMs === undefined
              ? {}
              : { authTimeoutMs: options.events.authTimeoutMs }),
          },
    dashboard: false,
    demoAccount: false,
    startFacilitator: false,
    ...(options.metrics === undefined ? {} : { metrics: options.metrics.registry }),
    ...(options.readiness === undefined ? {} : { readiness: options.readiness }),
    ...(options.extraRoutes === undefined ? {} : { extraRoutes: options.extraRoutes }),
  });
  // The event side's jobs, as before: tests drive the reconciler and finisher themselves.
  gateway.startJobs(['webhook-delivery', 'event-retention']);
  const { app, services, networks, masterKey, events } = gateway;
  const accounts = services.accounts;
  return {
    app,
    store,
    services,
    networks,
    accounts,
    masterKey,
    events,
    gateway,
    newCaller: async (plan = 'standard', rateLimit) => {
      const account = await accounts.createAccount({
        name: `test ${plan}`,
        plan,
        ...(rateLimit === undefined ? {} : { rateLimit }),
      });
      const { key } = await accounts.createKey(account.id, 'test');
      return { accountId: account.id, key };
    },
    close: async () => {
      await gateway.close();
      if (options.disposeStorage !== false) await storage.dispose();
    },
  };
}

export function bearer(key: string): { authorization: string } {
  return { authorization: `Bearer ${key}` };
}
