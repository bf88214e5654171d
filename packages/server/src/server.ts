import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { buildDashboard, DASHBOARD_DIST_DIR, isDashboardBuilt } from '@gate402/dashboard';
import type { FastifyInstance } from 'fastify';
import { type DestinationStream, type Logger, pino } from 'pino';
import { buildApp } from './app.ts';
import { connectEvm } from './chains/evm/connect-evm.ts';
import { listedTokens } from './chains/extra-tokens.ts';
import { NetworkRegistry } from './chains/network-registry.ts';
import { connectSolana } from './chains/solana/connect-solana.ts';
import type { Config } from './config.ts';
import { createPaymentEvents } from './events/payment-events.ts';
import type { ReadinessCheck } from './http/routes/health.ts';
import { GatewayMetrics } from './metrics/gateway-metrics.ts';
import { MemoryRateLimiter } from './ratelimit/memory-rate-limiter.ts';
import type { RateLimiter } from './ratelimit/rate-limiter.ts';
import { RedisRateLimiter } from './ratelimit/redis-rate-limiter.ts';
import type { AccountService, CreatedApiKey } from './services/account-service.ts';
import { loadMasterKey } from './services/custody/master-key.ts';
import { DashboardAuthService } from './services/dashboard/dashboard-auth-service.ts';
import { createServices, type GatewayServices } from './services/gateway-services.ts';
import { openStore, storageLocation } from './store/open-store.ts';
import { makeDataDirPrivate } from './store/private-data-dir.ts';
import type { Store } from './store/store.ts';
import { PaymentReconciler } from './workers/payment-reconciler.ts';
import { SettlementFinisher } from './workers/settlement-finisher.ts';

export interface RunningServer {
  readonly app: FastifyInstance;
  /** The base URL the API listens on, e.g. http://127.0.0.1:8402. */
  readonly url: string;
  readonly demo: DemoAccount | undefined;
  /** The parts it runs on, for tools that embed the gateway (benchmarks, tests). */
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly services: GatewayServices;
  /** Stops accepting requests, lets the ones in flight finish, then closes storage and Redis. */
  close(): Promise<void>;
}

export interface DemoAccount {
  readonly accountId: string;
  readonly key: string;
}

/** Headers that may carry secrets, wherever a log line holds a headers object. */
const SECRET_HEADERS = ['authorization', 'cookie', 'set-cookie', 'x-payment', 'payment-signature'];
/** Fields that may carry secrets, at any depth pino's wildcard reaches. */
const SECRET_FIELDS = [
  'apiKey',
  'key',
  'secret',
  'password',
  'privateKey',
  'masterKey',
  'databaseUrl',
  'redisUrl',
  // Sent to a caller's facilitatorUrl only: an API key of that facilitator.
  'facilitatorAuthorization',
  'metricsToken',
];

/** pino replaces these values with "[redacted]" before anything is written. */
export const REDACTED_LOG_PATHS = [
  ...SECRET_HEADERS.flatMap((h) => [`headers["${h}"]`, `*.headers["${h}"]`, `*.*.headers["${h}"]`]),
  ...SECRET_FIELDS.flatMap((f) => [f, `*.${f}`]),
];

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } };
  return destination === undefined ? pino(options) : pino(options, destination);
}

/**
 * The composition root: configuration → storage → rate limiter → services → app → listen.
 * Everything it opens, it closes again in `close()`, in reverse order.
 */
export async function startServer(
  config: Config,
  logger: Logger = createLogger(config),
): Promise<RunningServer> {
  // Loaded once, first: services and webhooks must seal with the very same key, and a missing or
  // unreadable key stops the start before storage is migrated or any chain is started.
  // First of all: every file the gateway and its chains write into DATA_DIR is created private.
  const { tightened, failed } = makeDataDirPrivate(config.dataDir);
  if (tightened.length > 0) {
    logger.info(
      { dataDir: config.dataDir, files: tightened.length },
      'tightened permissions in DATA_DIR: readable by the gateway user only (0600 files, 0700 folders)',
    );
  }
  if (failed.length > 0) {
    logger.warn({ dataDir: config.dataDir, paths: failed }, 'could not make these DATA_DIR paths private');
  }
  const masterKey = loadMasterKey(config, (message) => logger.warn(message));
  const location = storageLocation(config);
  // Storage trouble the pool recovers from by itself (a connection terminated, replaced on next use).
  const { store, migrated } = await openStore(location, {
    onProblem: (message, error) => logger.warn({ err: error }, message),
  });
  logger.info(
    { storage: location.kind === 'sqlite' ? location.file : 'postgresql', migrated },
    migrated.length > 0 ? 'storage migrated' : 'storage ready',
  );
  const closers: (() => Promise<void>)[] = [() => store.close()];
  try {
    const readiness: ReadinessCheck[] = [{ name: 'storage', check: () => store.ping() }];
    const rateLimiter = await createRateLimiter(config, readiness, logger);
    closers.unshift(() => rateLimiter.close());

    const log = (message: string) => logger.info(message);
    // Measured only when someone may read it (METRICS_TOKEN set): otherwise nothing is added per request.
    const metrics = config.metricsToken === undefined ? undefined : new GatewayMetrics({ store });
    // Both chains start at once; if one fails, the other is still closed.
    const [solana, evm] = await Promise.allSettled([
      connectSolana(config, log, metrics),
      connectEvm(config, log, metrics),
    ]);
    if (solana.status === 'fulfilled') closers.unshift(() => solana.value.close());
    if (evm.status === 'fulfilled') closers.unshift(() => evm.value.close());
    if (solana.status === 'rejected') throw solana.reason;
    if (evm.status === 'rejected') throw evm.reason;
    const adapters = [solana.value.adapter, ...evm.value.adapters];
    const networks = new NetworkRegistry(adapters, await listedTokens(config.x402ExtraAssets, adapters));
    for (const chain of networks.all()) readiness.push({ name: chain.info.id, check: () => chain.ping() });

    const instanceId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    const services = createServices({
      store,
      networks,
      masterKey,
      instanceId,
      confirmTimeoutMs: config.confirmTimeoutMs,
      proofMaxAgeMs: config.proofMaxAgeSeconds * 1000,
      authCacheMs: config.authCacheMs,
      x402LocalnetAsDevnet: config.x402LocalnetAsDevnet,
      outbound: { allowPrivate: config.allowPrivateOutboundUrls, ports: config.outboundPorts },
      feeBudget: { budgets: config.x402FeeBudget, minimums: config.x402MinSettleAmount },
      ...(metrics === undefined ? {} : { confirmations: metrics, sponsoredFees: metrics }),
    });
    await services.facilitator.start();
    const demo = config.demoAccount ? await ensureDemoAccount(store, services.accounts) : undefined;

    const events = await createPaymentEvents({
      store,
      masterKey,
      instanceId,
      config,
      log: (message, error) => logger.warn({ err: error }, message),
      ...(metrics === undefined ? {} : { onWebhookAttempt: (result) => metrics.webhookAttempted(result) }),
    });
    closers.unshift(() => events.close());
    await events.start();
    metrics?.watchOutbox(() => events.hub.position);

    const dashboard = {
      auth: new DashboardAuthService(store, rateLimiter, {
        signupEnabled: config.dashboardSignup,
        sessionTtlMs: config.dashboardSessionHours * 3_600_000,
        loginAttemptsPerMinute: config.dashboardLoginAttempts,
      }),
      distDir: await dashboardFiles(logger),
    };
    const app = await buildApp({
      config,
      store,
      services,
      rateLimiter,
      networks,
      readiness,
      logger,
      events,
      dashboard,
      ...(metrics === undefined || config.metricsToken === undefined
        ? {}
        : { metrics: { registry: metrics, token: config.metricsToken } }),
    });
    closers.unshift(() => app.close());
    const reconciler = new PaymentReconciler({
      store,
      networks,
      ledger: services.ledger,
      wallets: services.wallets,
      x402Receipts: services.x402Receipts,
      instanceId,
      intervalMs: config.reconcileIntervalMs,
      log: (message, error) => logger.warn({ err: error }, message),
      finality: metrics,
    });
    reconciler.start();
    closers.unshift(() => reconciler.stop());
    const settlements = new SettlementFinisher({
      store,
      facilitator: services.facilitator,
      instanceId,
      settleWaitMs: config.confirmTimeoutMs,
      log: (message, error) => logger.warn({ err: error }, message),
    });
    settlements.start();
    closers.unshift(() => settlements.stop());
    await app.listen({ port: config.port, host: config.host });
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : config.port;
    const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;

    return {
      app,
      url,
      demo,
      store,
      networks,
      services,
      close: async () => {
        for (const close of closers) await close();
      },
    };
  } catch (error) {
    for (const close of closers) await close().catch(() => {});
    throw error;
  }
}

/** The built dashboard; built now when `npm install` did not (e.g. --ignore-scripts). Never fatal. */
async function dashboardFiles(logger: Logger): Promise<string> {
  if (!isDashboardBuilt()) {
    logger.info('building the dashboard (packages/dashboard/dist is missing)');
    await buildDashboard().catch((error: unknown) =>
      logger.warn({ err: error }, 'the dashboard could not be built; /dashboard says how to build it'),
    );
  }
  return DASHBOARD_DIST_DIR;
}

async function createRateLimiter(
  config: Config,
  readiness: ReadinessCheck[],
  logger: Logger,
): Promise<RateLimiter> {
  if (config.redisUrl === undefined) return new MemoryRateLimiter();
  const redis = new RedisRateLimiter(config.redisUrl, {
    onError: (error) => logger.warn({ err: error }, 'redis connection problem'),
  });
  await redis.connect();
  readiness.push({ name: 'redis', check: () => redis.ping() });
  return redis;
}

/** On storage with no account at all, a Standard demo account and key, so the README's curl line works. */
async function ensureDemoAccount(store: Store, accounts: AccountService): Promise<DemoAccount | undefined> {
  if ((await store.accounts.count()) > 0) return undefined;
  const account = await accounts.createAccount({ name: 'demo', plan: 'standard' });
  const created: CreatedApiKey = await accounts.createKey(account.id, 'demo');
  return { accountId: account.id, key: created.key };
}
