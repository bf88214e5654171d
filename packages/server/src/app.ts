import { randomUUID } from 'node:crypto';
import { createServer } from 'node:https';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerFactory,
  type RawServerDefault,
} from 'fastify';
import type { NetworkRegistry } from './chains/network-registry.ts';
import { type Config, SETTINGS } from './config.ts';
import { invalidParameters } from './domain/gateway-error.ts';
import type { PaymentEvents } from './events/payment-events.ts';
import { capConnectionsPerAddress, serverTimeoutOptions } from './http/connection-limits.ts';
import { DASHBOARD_API_PREFIX, dashboardApi } from './http/dashboard/dashboard-api.ts';
import { dashboardStatic } from './http/dashboard/dashboard-static.ts';
import type { Door } from './http/doors.ts';
import { LazyRequestLogger } from './http/lazy-request-logger.ts';
import { installAuthentication } from './http/plugins/authentication.ts';
import {
  clientErrorHandler,
  frameworkErrorHandler,
  installErrorHandling,
  MAX_PATH_PARAMETER_LENGTH,
} from './http/plugins/errors.ts';
import { installExactJson } from './http/plugins/exact-json.ts';
import { installHsts } from './http/plugins/hsts.ts';
import { installIdempotency } from './http/plugins/idempotency.ts';
import { installMetrics } from './http/plugins/metrics.ts';
import { installOpenApi } from './http/plugins/openapi.ts';
import { installValidation } from './http/plugins/validation.ts';
import { accountRoutes } from './http/routes/account.ts';
import { accountSummaryRoutes } from './http/routes/account-summary.ts';
import { asyncApiRoutes } from './http/routes/asyncapi.ts';
import { exportRoutes } from './http/routes/export.ts';
import { facilitatorRoutes } from './http/routes/facilitator.ts';
import { faucetRoutes } from './http/routes/faucet.ts';
import { guideRoutes } from './http/routes/guide.ts';
import { healthRoutes, type ReadinessCheck } from './http/routes/health.ts';
import { homeRoutes } from './http/routes/home.ts';
import { mcpRoutes } from './http/routes/mcp.ts';
import { networkRoutes } from './http/routes/networks.ts';
import { paymentRoutes } from './http/routes/payments.ts';
import { portfolioRoutes } from './http/routes/portfolio.ts';
import { refundRoutes } from './http/routes/refunds.ts';
import { spendPolicyRoutes } from './http/routes/spend-policies.ts';
import { tokenAccountRoutes } from './http/routes/token-accounts.ts';
import { tokenRoutes } from './http/routes/tokens.ts';
import { transactionRoutes } from './http/routes/transactions.ts';
import { verifyRoutes } from './http/routes/verify.ts';
import { walletRoutes } from './http/routes/wallets.ts';
import { webhookRoutes } from './http/routes/webhooks.ts';
import { wellKnownRoutes } from './http/routes/well-known.ts';
import { x402PayRoutes } from './http/routes/x402-pay.ts';
import type { TlsCertificates } from './http/tls/tls-certificates.ts';
import type { GatewayMetrics } from './metrics/gateway-metrics.ts';
import type { OutboundPolicy } from './outbound/ssrf-guard.ts';
import './http/fastify-types.ts';
import { installPaymentStream, STREAM_PATH } from './events/stream/payment-stream.ts';
import type { RateLimiter } from './ratelimit/rate-limiter.ts';
import { AccessPolicy } from './services/accounts/access-policy.ts';
import type { DashboardAuthService } from './services/dashboard-auth/dashboard-auth-service.ts';
import type { GatewayServices } from './services/gateway-services.ts';
import { TokenAccountService } from './services/wallets/token-accounts.ts';
import type { Store } from './store/store.ts';
import { installHttpTracing } from './telemetry/http-tracing.ts';
import { GATE402_VERSION } from './version.ts';

export interface AppDeps {
  readonly config: Pick<Config, 'bodyLimitBytes' | 'planAccess' | 'trustProxy'> &
    Partial<
      Pick<
        Config,
        'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnectionsPerAddress' | 'streamMaxUnauthenticated'
      >
    >;
  readonly store: Store;
  readonly services: GatewayServices;
  readonly rateLimiter: RateLimiter;
  readonly networks: NetworkRegistry;
  /** What /readyz asks: storage always, then Redis and chains when configured. */
  readonly readiness: readonly ReadinessCheck[];
  /** The payment stream and webhooks; without it neither is served. */
  readonly events?: PaymentEvents;
  /** Prometheus metrics; /metrics is served (behind `token`) only when given. */
  readonly metrics?: { readonly registry: GatewayMetrics; readonly token: string };
  /** A pino logger; tests leave it out for silence. */
  readonly logger?: FastifyBaseLogger;
  /** The web dashboard at /dashboard: its log-ins and the directory of its built files. */
  readonly dashboard?: { readonly auth: DashboardAuthService; readonly distDir: string };
  /** Serve HTTPS (and the stream as WSS) with this certificate, sending HSTS. Default: plain HTTP. */
  readonly tls?: TlsCertificates;
  /** Where /mcp's fetch_paid_url may go (the SSRF guard's policy). Default: public addresses only. */
  readonly outbound?: OutboundPolicy;
}

/**
 * An https server, not Fastify's `https` option, so the certificates hold on to it and can swap its
 * secure context on reload. Everything else about the server is as for plain HTTP (timeouts are set on
 * it below, as on the http one).
 */
function httpsServerFactory(
  tls: TlsCertificates,
  requestTimeoutMs: number,
): FastifyServerFactory<RawServerDefault> {
  return (handler) => {
    const server = createServer(
      // The TLS handshake comes before the request timer starts: without its own limit, a client that
      // connects and never finishes the handshake would hold the socket for Node's default 120 s.
      { ...tls.current.options, handshakeTimeout: requestTimeoutMs },
      handler,
    );
    tls.attach(server);
    return server;
  };
}

/** Request ids we accept from a caller's X-Request-Id: short and printable, so logs stay clean. */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * Builds the HTTP application from its dependencies. It starts nothing and listens nowhere: server.ts
 * does that, and tests call this with the parts they choose and use `app.inject()`.
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const timeouts = serverTimeoutOptions({
    requestTimeoutMs: deps.config.requestTimeoutMs ?? SETTINGS.requestTimeoutMs.fallback({}),
    keepAliveTimeoutMs: deps.config.keepAliveTimeoutMs ?? SETTINGS.keepAliveTimeoutMs.fallback({}),
  });
  const trustProxy = deps.config.trustProxy;
  const tls = deps.tls;
  const app = Fastify({
    ...(deps.logger === undefined ? { logger: false } : { loggerInstance: deps.logger }),
    bodyLimit: deps.config.bodyLimitBytes,
    // A hop count as the function proxy-addr makes of one (Fastify's types leave the number form out).
    trustProxy:
      trustProxy === false
        ? false
        : typeof trustProxy === 'number'
          ? (_address: string, hop: number) => hop < trustProxy
          : [...trustProxy],
    requestTimeout: timeouts.requestTimeout,
    keepAliveTimeout: timeouts.keepAliveTimeout,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && SAFE_REQUEST_ID.test(given) ? given : `req_${randomUUID()}`;
    },
    childLoggerFactory: (logger, bindings, options) => new LazyRequestLogger(logger, bindings, options),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAMETER_LENGTH },
    ...(tls === undefined ? {} : { serverFactory: httpsServerFactory(tls, timeouts.requestTimeout) }),
  }).withTypeProvider<TypeBoxTypeProvider>();

  // Before any hook or route: a request's span covers all of it, and every handler runs inside it.
  installHttpTracing(app);
  // Fastify's requestTimeout alone does not time out a request whose body never comes (connection-limits.ts).
  Object.assign(app.server, timeouts);
  capConnectionsPerAddress(
    app.server,
    deps.config.maxConnectionsPerAddress ?? SETTINGS.maxConnectionsPerAddress.fallback({}),
    trustProxy,
  );

  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    // No path or query parameter of any route holds a NUL, and PostgreSQL refuses one in a query
    // (SQLite merely finds nothing): refused here, once, not as a 500 from whichever lookup meets it.
    const nul = request.url.indexOf('%00');
    if (nul !== -1) {
      const query = request.url.indexOf('?');
      const part = query !== -1 && query < nul ? 'query' : 'path';
      done(
        invalidParameters(
          { [part]: 'must not contain a NUL character (%00)' },
          `The URL ${part} contains a NUL character (%00).`,
        ),
      );
      return;
    }
    done();
  });
  if (tls !== undefined) installHsts(app);

  installValidation(app);
  installExactJson(app);
  installErrorHandling(app);
  await installOpenApi(app, GATE402_VERSION);
  // After the OpenAPI plugin, so /metrics is in the document; its onResponse hook still sees every route.
  if (deps.metrics !== undefined)
    installMetrics(app, { metrics: deps.metrics.registry, token: deps.metrics.token });
  const { services } = deps;
  // The one authorization policy every door asks: API routes, the payment stream, the dashboard API.
  const policy = new AccessPolicy({
    accounts: services.accounts,
    rateLimiter: deps.rateLimiter,
    planAccess: deps.config.planAccess,
    ...(deps.metrics === undefined
      ? {}
      : { onRateLimited: (plan: string) => deps.metrics?.registry.rateLimitRejected(plan) }),
  });
  const doors: Door[] = [];
  app.decorate('doors', doors);
  installAuthentication(app, { policy, doors });
  installIdempotency(app, deps.store);

  await app.register(healthRoutes, { checks: deps.readiness });
  await app.register(homeRoutes, { version: GATE402_VERSION, dashboard: deps.dashboard !== undefined });
  await app.register(guideRoutes);
  await app.register(wellKnownRoutes, { proofs: services.proofs });
  await app.register(accountRoutes);
  await app.register(accountSummaryRoutes, { summary: services.summary });
  await app.register(spendPolicyRoutes, { spendPolicies: services.spendPolicies });
  await app.register(networkRoutes, { networks: deps.networks, facilitator: services.facilitator });
  await app.register(tokenAccountRoutes, {
    tokenAccounts: new TokenAccountService(services.wallets, deps.networks),
  });
  await app.register(faucetRoutes, { faucet: services.faucet });
  await app.register(walletRoutes, { wallets: services.wallets });
  await app.register(paymentRoutes, services);
  await app.register(exportRoutes, { exports: services.exports });
  await app.register(refundRoutes, services);
  await app.register(x402PayRoutes, services);
  await app.register(transactionRoutes, services);
  await app.register(verifyRoutes, services);
  await app.register(tokenRoutes, services);
  await app.register(portfolioRoutes, services);
  await app.register(facilitatorRoutes, services);
  await app.register(mcpRoutes, {
    app,
    outbound: deps.outbound ?? { allowPrivate: false },
    version: GATE402_VERSION,
  });
  await app.register(asyncApiRoutes, { version: GATE402_VERSION, secure: tls !== undefined });
  if (deps.events !== undefined) {
    await app.register(webhookRoutes, { webhooks: deps.events.webhooks });
    installPaymentStream(app, {
      ...deps.events.stream,
      hub: deps.events.hub,
      policy,
      maxUnauthenticated:
        deps.config.streamMaxUnauthenticated ?? SETTINGS.streamMaxUnauthenticated.fallback({}),
    });
    doors.push({ way: 'stream', method: 'GET', url: STREAM_PATH, access: 'stream' });
  }
  if (deps.dashboard !== undefined) {
    await app.register(dashboardApi, {
      prefix: DASHBOARD_API_PREFIX,
      auth: deps.dashboard.auth,
      services,
      store: deps.store,
      networks: deps.networks,
      rateLimiter: deps.rateLimiter,
      policy,
      doors,
      events: deps.events,
    });
    await app.register(dashboardStatic, { distDir: deps.dashboard.distDir });
  }

  return app;
}
