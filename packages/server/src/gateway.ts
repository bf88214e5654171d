import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { buildDashboard, DASHBOARD_DIST_DIR, isDashboardBuilt } from '@gate402/dashboard';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { type DestinationStream, type Logger, pino } from 'pino';
import { buildApp } from './app.ts';
import { connectNetworks } from './chains/connect-networks.ts';
import type { NetworkRegistry } from './chains/network-registry.ts';
import type { Config, LogFormat } from './config.ts';
import { PLAN_RATE_LIMITS, PLANS, type Plan } from './domain/plan.ts';
import type { PlanAccess } from './domain/plan-access.ts';
import { createPaymentEvents, type PaymentEvents } from './events/payment-events.ts';
import type { ReadinessCheck } from './http/routes/health.ts';
import { TlsCertificates, type TlsReload } from './http/tls/tls-certificates.ts';
import { tlsFiles } from './http/tls/tls-credentials.ts';
import { chooseLogFormat, prettyLogStream } from './log-format.ts';
import { GatewayMetrics } from './metrics/gateway-metrics.ts';
import { MemoryRateLimiter } from './ratelimit/memory-rate-limiter.ts';
import type { RateLimiter } from './ratelimit/rate-limiter.ts';
import { RedisRateLimiter } from './ratelimit/redis-rate-limiter.ts';
import { type Job, type JobName, namedJob } from './scheduling/job.ts';
import type { AccountService, CreatedApiKey } from './services/accounts/account-service.ts';
import { loadMasterKey } from './services/custody/master-key.ts';
import { DashboardAuthService } from './services/dashboard-auth/dashboard-auth-service.ts';
import type { FacilitatorHooks } from './services/facilitator/facilitator-hooks.ts';
import { createServices, type GatewayServices, type ServiceParts } from './services/gateway-services.ts';
import { openStore, storageLocation } from './store/open-store.ts';
import { makeDataDirPrivate } from './store/private-data-dir.ts';
import type { Store } from './store/store.ts';
import { PaymentReconciler } from './workers/payment-reconciler.ts';
import { SessionPurgeJob } from './workers/session-purge-job.ts';
import { SettlementFinisher } from './workers/settlement-finisher.ts';
import { UptoEscrowSweep } from './workers/upto-escrow-sweep.ts';

/** Parts a caller brings instead of the ones the configuration would make (tests, benchmarks, tools). */
export interface GatewayOverrides {
  /** Storage already open; the gateway closes it with itself. Default: opened from the configuration. */
  readonly store?: Store;
  /** Chains already connected; the gateway neither starts nor closes them. Default: from the configuration. */
  readonly networks?: NetworkRegistry;
  /** Default: loaded from MASTER_KEY or DATA_DIR. */
  readonly masterKey?: Uint8Array;
  /** Default: Redis with REDIS_URL, else in memory. */
  readonly rateLimiter?: RateLimiter;
  /** Names this process in leases. Default: host, pid and a random suffix. */
  readonly instanceId?: string;
  /** The gateway's own messages. Default: a JSON logger at LOG_LEVEL. */
  readonly logger?: Logger;
  /** The HTTP layer's logger; `null`: Fastify logs nothing. Default: `logger`. */
  readonly httpLogger?: FastifyBaseLogger | null;
  /** Service settings beyond the configuration (a clock, fee budgets, trusted proof keys, …). */
  readonly services?: Partial<Omit<ServiceParts, 'store' | 'networks' | 'masterKey' | 'instanceId'>>;
  /** The payment stream and webhooks; `false`: neither is served. Default: served. */
  readonly events?: false | { readonly redisChannel?: string; readonly authTimeoutMs?: number };
  /** The web dashboard; `false`: not served. Default: served from the built files. */
  readonly dashboard?:
    | false
    | {
        readonly now?: () => number;
        readonly sessionPurgeIntervalMs?: number;
        readonly distDir?: string;
        readonly rateLimiter?: RateLimiter;
      };
  /** Metrics; with METRICS_TOKEN they are served at /metrics. Default: measured when METRICS_TOKEN is set. */
  readonly metrics?: GatewayMetrics;
  /** More checks for /readyz after storage, Redis and the chains. */
  readonly readiness?: readonly ReadinessCheck[];
  /** Routes a test adds before the app is sealed. */
  readonly extraRoutes?: (app: FastifyInstance) => void;
  /**
   * Load the facilitator's fee-payer keys and fund them on local chains while building (default true);
   * false leaves `services.facilitator.start()` to the caller (tests whose chains advance by hand).
   */
  readonly startFacilitator?: boolean;
  /** On storage with no account, create a demo account and key (DEMO_ACCOUNT). Default: the configuration. */
  readonly demoAccount?: boolean;
  /**
   * The operator's lifecycle hooks around the built-in facilitator's verify and settle (log, veto,
   * recover), named as x402's `x402Facilitator` names them; a hook that throws is logged (error level)
   * unless they bring their own `onHookError`. See FacilitatorHooks for what each may do.
   */
  readonly facilitatorHooks?: FacilitatorHooks;
}

export interface DemoAccount {
  readonly accountId: string;
  /** The plan granting the most features in PLAN_ACCESS (Enterprise by default: every feature). */
  readonly plan: Plan;
  readonly key: string;
  /** A dashboard log-in to the same account; absent when the dashboard is not served. */
  readonly dashboardLogin: { readonly email: string; readonly password: string } | undefined;
}

/** One gateway instance: its parts, its jobs, and the one way to start and stop them. */
export interface Gateway {
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly services: GatewayServices;
  readonly rateLimiter: RateLimiter;
  readonly masterKey: Uint8Array;
  readonly instanceId: string;
  readonly events: PaymentEvents | undefined;
  readonly dashboardAuth: DashboardAuthService | undefined;
  readonly demo: DemoAccount | undefined;
  /** Every background job of this instance; none runs until `startJobs`. */
  readonly jobs: readonly Job[];
  /** Starts the jobs named (default: all of them). */
  startJobs(names?: readonly JobName[]): void;
  /** The certificate served with TLS_CERT_FILE; undefined on plain HTTP. */
  readonly tls: TlsCertificates | undefined;
  /** Listens on HOST:PORT and answers the base URL, e.g. http://127.0.0.1:8402 (https:// with TLS). */
  listen(): Promise<string>;
  /**
   * Reads the TLS files again and serves them to new connections, established ones untouched (what
   * SIGHUP does); bad files keep the old certificate. Logged either way. Undefined on plain HTTP.
   */
  reloadTls(): TlsReload | undefined;
  /** Stops the jobs and the HTTP server (letting requests in flight finish), then what it opened. */
  close(): Promise<void>;
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

/**
 * The gateway's logger at LOG_LEVEL. Entries go to `destination` as JSON lines, or to stdout in the
 * format LOG_FORMAT names; unset, human-readable lines when stdout is a terminal (colored), else JSON.
 * `logFormat: 'pretty'` with a destination writes readable lines to it, uncolored.
 */
export function createLogger(
  config: Pick<Config, 'logLevel'> & { readonly logFormat?: LogFormat | undefined },
  destination?: DestinationStream,
): Logger {
  const options = { level: config.logLevel, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } };
  if (destination !== undefined) {
    return config.logFormat === 'pretty'
      ? pino(options, prettyLogStream(destination, { colors: false }))
      : pino(options, destination);
  }
  const stdoutIsTty = process.stdout.isTTY === true;
  if (chooseLogFormat(config.logFormat, stdoutIsTty) === 'json') return pino(options);
  return pino(options, prettyLogStream(process.stdout, { colors: stdoutIsTty }));
}

/**
 * The composition root, the one place the gateway is wired: configuration → storage → rate limiter →
 * chains → services → events → app → jobs. `server.ts`, the CLI, tests and benchmarks all build the
 * gateway here. Everything it opens, `close()` closes again, in reverse order; a failure while building
 * closes what was already open.
 */
export async function createGateway(config: Config, overrides: GatewayOverrides = {}): Promise<Gateway> {
  const logger = overrides.logger ?? createLogger(config);
  const warn = (message: string, error: unknown) => logger.warn({ err: error }, message);
  const closers: (() => Promise<void>)[] = [];
  const closeAll = async () => {
    for (const close of closers.splice(0)) await close().catch(() => {});
  };
  try {
    // Before anything is opened: a certificate that does not check out stops the start at once, with
    // the setting named, rather than after storage was migrated and the chains started.
    const files = tlsFiles(config);
    const tls = files === undefined ? undefined : new TlsCertificates(files);
    if (tls !== undefined) logCertificate(logger, tls, 'serving TLS');
    let store = overrides.store;
    let masterKey = overrides.masterKey;
    if (store === undefined || masterKey === undefined) {
      // First of all: every file the gateway and its chains write into DATA_DIR is created private.
      privateDataDir(config, logger);
    }
    // Loaded once, first: services and webhooks must seal with the very same key, and a missing or
    // unreadable key stops the start before storage is migrated or any chain is started.
    masterKey ??= loadMasterKey(config, (message) => logger.warn(message));
    if (store === undefined) {
      const location = storageLocation(config);
      // Storage trouble the pool recovers from by itself (a connection terminated, replaced on next use).
      const opened = await openStore(location, { onProblem: (message, error) => warn(message, error) });
      store = opened.store;
      logger.info(
        { storage: location.kind === 'sqlite' ? location.file : 'postgresql', migrated: opened.migrated },
        opened.migrated.length > 0 ? 'storage migrated' : 'storage ready',
      );
    }
    const openStoreRef = store;
    closers.unshift(() => openStoreRef.close());

    const readiness: ReadinessCheck[] = [{ name: 'storage', check: () => openStoreRef.ping() }];
    const rateLimiter = overrides.rateLimiter ?? (await createRateLimiter(config, readiness, logger));
    closers.unshift(() => rateLimiter.close());

    // Measured only when someone may read it (METRICS_TOKEN set): otherwise nothing is added per request.
    const metrics =
      overrides.metrics ?? (config.metricsToken === undefined ? undefined : new GatewayMetrics({ store }));
    if (metrics !== undefined && !metrics.watchingStorage) metrics.watchStorage(store);
    let networks = overrides.networks;
    if (networks === undefined) {
      const connected = await connectNetworks(config, (message) => logger.info(message), metrics);
      closers.unshift(() => connected.close());
      networks = connected.networks;
      for (const chain of networks.all()) readiness.push({ name: chain.info.id, check: () => chain.ping() });
    }
    readiness.push(...(overrides.readiness ?? []));

    const instanceId =
      overrides.instanceId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    const outbound = overrides.services?.outbound ?? {
      allowPrivate: config.allowPrivateOutboundUrls,
      ports: config.outboundPorts,
    };
    const services = createServices({
      store,
      networks,
      masterKey,
      instanceId,
      confirmTimeoutMs: config.confirmTimeoutMs,
      proofMaxAgeMs: config.proofMaxAgeSeconds * 1000,
      authCacheMs: config.authCacheMs,
      x402LocalnetAsDevnet: config.x402LocalnetAsDevnet,
      outbound,
      feeBudget: {
        budgets: config.x402FeeBudget,
        minimums: config.x402MinSettleAmount,
        maxOpenUptoChannels: config.x402UptoMaxOpenChannels,
        maxUptoChannelRent: config.x402UptoMaxChannelRent,
        maxUnsettledApprovalFundings: config.x402MaxUnsettledApprovalFundings,
      },
      sendAmountBounds: config.sendAmountBounds,
      discovery: {
        publicListing: config.x402DiscoveryPublic,
        maxPerAccount: config.x402DiscoveryMaxPerAccount,
        maxAgeMs: config.x402DiscoveryMaxAgeDays * 86_400_000,
      },
      ...(metrics === undefined ? {} : { confirmations: metrics, sponsoredFees: metrics }),
      ...(overrides.facilitatorHooks === undefined
        ? {}
        : {
            facilitatorHooks: {
              onHookError: (hook, error) => logger.error({ err: error, hook }, 'a facilitator hook failed'),
              ...overrides.facilitatorHooks,
            },
          }),
      ...overrides.services,
    });
    // The facilitator's start (fee-payer keys, funding them on local chains, Permit2 detection) waits on
    // the chains; the app is built meanwhile (CPU work), and the gateway is handed out once both are done.
    const facilitatorStarted =
      overrides.startFacilitator === false ? Promise.resolve() : services.facilitator.start();
    // Awaited below; a failure before that (the app not building) is reported by that failure instead.
    facilitatorStarted.catch(() => {});

    const events =
      overrides.events === false
        ? undefined
        : await createPaymentEvents({
            store,
            masterKey,
            instanceId,
            config,
            log: warn,
            ...(overrides.events?.redisChannel === undefined
              ? {}
              : { redisChannel: overrides.events.redisChannel }),
            ...(overrides.events?.authTimeoutMs === undefined
              ? {}
              : { authTimeoutMs: overrides.events.authTimeoutMs }),
            ...(metrics === undefined
              ? {}
              : { onWebhookAttempt: (result) => metrics.webhookAttempted(result) }),
          });
    if (events !== undefined) {
      closers.unshift(() => events.close());
      await events.start();
      metrics?.watchOutbox(() => events.hub.position);
    }

    const dashboardOptions = overrides.dashboard === false ? undefined : (overrides.dashboard ?? {});
    const dashboardAuth =
      dashboardOptions === undefined
        ? undefined
        : new DashboardAuthService(store, dashboardOptions.rateLimiter ?? rateLimiter, {
            signupEnabled: config.dashboardSignup,
            sessionTtlMs: config.dashboardSessionHours * 3_600_000,
            loginAttemptsPerMinute: config.dashboardLoginAttempts,
            ...(dashboardOptions.now === undefined ? {} : { now: dashboardOptions.now }),
            ...(dashboardOptions.sessionPurgeIntervalMs === undefined
              ? {}
              : { sessionPurgeIntervalMs: dashboardOptions.sessionPurgeIntervalMs }),
          });
    const demoWanted = overrides.demoAccount ?? config.demoAccount;
    const demo = demoWanted
      ? await ensureDemoAccount(store, services.accounts, dashboardAuth, config.planAccess)
      : undefined;
    const httpLogger = overrides.httpLogger === undefined ? logger : overrides.httpLogger;
    const app = await buildApp({
      config,
      store,
      services,
      rateLimiter,
      networks,
      readiness,
      outbound,
      ...(httpLogger === null ? {} : { logger: httpLogger }),
      ...(events === undefined ? {} : { events }),
      ...(dashboardAuth === undefined
        ? {}
        : {
            dashboard: {
              auth: dashboardAuth,
              distDir: dashboardOptions?.distDir ?? (await dashboardFiles(logger)),
            },
          }),
      ...(metrics === undefined || config.metricsToken === undefined
        ? {}
        : { metrics: { registry: metrics, token: config.metricsToken } }),
      ...(tls === undefined ? {} : { tls }),
    });
    overrides.extraRoutes?.(app);
    closers.unshift(() => app.close());
    await app.ready();
    await facilitatorStarted;

    // Every periodic job of an instance, in one list: nothing else in the gateway starts a timer loop.
    const jobs: Job[] = [
      namedJob(
        'payment-reconciler',
        new PaymentReconciler({
          store,
          networks,
          ledger: services.ledger,
          wallets: services.wallets,
          x402Receipts: services.x402Receipts,
          x402Purchases: services.x402Pay,
          instanceId,
          intervalMs: config.reconcileIntervalMs,
          log: warn,
          finality: metrics,
        }),
      ),
      namedJob(
        'settlement-finisher',
        new SettlementFinisher({
          store,
          facilitator: services.facilitator,
          instanceId,
          settleWaitMs: config.confirmTimeoutMs,
          log: warn,
        }),
      ),
      namedJob(
        'upto-escrow-sweep',
        new UptoEscrowSweep({ store, networks, facilitator: services.facilitator, instanceId, log: warn }),
      ),
      ...(events?.jobs ?? []),
      ...(dashboardAuth === undefined ? [] : [new SessionPurgeJob(dashboardAuth, warn)]),
    ];
    const started = new Set<Job>();
    // Jobs stop before the app and storage close (closers run in reverse order of opening).
    closers.unshift(async () => {
      for (const job of [...started].reverse()) await job.stop();
    });
    const appRef = app;
    return {
      app,
      store,
      networks,
      services,
      rateLimiter,
      masterKey,
      instanceId,
      events,
      dashboardAuth,
      demo,
      jobs,
      startJobs: (names) => {
        for (const job of jobs) {
          if (started.has(job) || (names !== undefined && !names.includes(job.name))) continue;
          job.start();
          started.add(job);
        }
      },
      tls,
      listen: async () => {
        await appRef.listen({ port: config.port, host: config.host });
        const address = appRef.server.address();
        const port = typeof address === 'object' && address !== null ? address.port : config.port;
        const scheme = tls === undefined ? 'http' : 'https';
        return `${scheme}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
      },
      reloadTls: () => {
        if (tls === undefined) return undefined;
        const result = tls.reload();
        if (result.ok) logCertificate(logger, tls, 'TLS certificate reloaded');
        else
          logger.error(
            { problem: result.problem },
            'TLS certificate not reloaded; still serving the previous one',
          );
        return result;
      },
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/** Which certificate is served, and a warning when it has expired (browsers refuse it). */
function logCertificate(logger: Logger, tls: TlsCertificates, message: string): void {
  const { fingerprint256, subject, subjectAltName, validTo } = tls.current.certificate;
  logger.info({ fingerprint256, subject, subjectAltName, validTo: validTo.toISOString() }, message);
  if (validTo.getTime() < Date.now()) {
    logger.warn(
      { validTo: validTo.toISOString() },
      'the TLS certificate has expired; clients will refuse it',
    );
  }
}

function privateDataDir(config: Config, logger: Logger): void {
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

/** The demo account's dashboard log-in; `.local` is reserved for local names, so it is nobody's mailbox. */
export const DEMO_EMAIL = 'demo@gate402.local';

/**
 * On storage with no account at all, a demo account that can try everything: the plan granting the most
 * features (Enterprise, at Premium's rate, by default; a narrower PLAN_ACCESS is honoured), an API key,
 * and a dashboard log-in with a random password, so signing up is not the only way into the dashboard
 * and the dashboard shows what the key did. The secrets are returned for the start banner only (stdout,
 * never the logger); the password is stored hashed like any other.
 */
async function ensureDemoAccount(
  store: Store,
  accounts: AccountService,
  dashboardAuth: DashboardAuthService | undefined,
  planAccess: PlanAccess,
): Promise<DemoAccount | undefined> {
  if ((await store.accounts.count()) > 0) return undefined;
  const plan = fullestPlan(planAccess);
  const account = await accounts.createAccount({
    name: 'demo',
    plan,
    ...(plan === 'enterprise' ? { rateLimit: PLAN_RATE_LIMITS.premium } : {}),
  });
  const created: CreatedApiKey = await accounts.createKey(account.id, 'demo');
  let dashboardLogin: DemoAccount['dashboardLogin'];
  if (dashboardAuth !== undefined) {
    // 120 random bits: a password nobody guesses, short enough to type from the banner.
    const password = randomBytes(15).toString('base64url');
    await dashboardAuth.setPassword({ accountId: account.id, email: DEMO_EMAIL, password });
    dashboardLogin = { email: DEMO_EMAIL, password };
  }
  return { accountId: account.id, plan, key: created.key, dashboardLogin };
}

/** The plan granting the most features; on a tie the higher plan (PLANS is in ascending order). */
export function fullestPlan(planAccess: PlanAccess): Plan {
  let best: Plan = PLANS[0];
  for (const plan of PLANS) if (planAccess[plan].size >= planAccess[best].size) best = plan;
  return best;
}
