import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { GatewayError } from '../../domain/gateway-error.ts';
import { RATE_WINDOW_MS } from '../../domain/plan.ts';
import type { Feature, PlanAccess } from '../../domain/plan-access.ts';
import type { RateLimitDecision, RateLimiter } from '../../ratelimit/rate-limiter.ts';
import type { AccountService, AuthenticatedKey } from '../../services/account-service.ts';
import { sendError } from './errors.ts';

export interface AuthenticationDeps {
  readonly accounts: AccountService;
  readonly rateLimiter: RateLimiter;
  readonly planAccess: PlanAccess;
  /** Told about each 429 (metrics). */
  readonly onRateLimited?: (plan: string) => void;
}

const BEARER = /^Bearer +(\S+)$/i;
const RATE_WINDOW_SECONDS = RATE_WINDOW_MS / 1000;

/**
 * Spec §5 and §8 for every route that names a feature, before its body is read:
 * 1. the Bearer key must be an active key (401 UNAUTHORIZED, the same answer whatever was wrong);
 * 2. the request is counted against the account's per-minute limit, over all its keys (429);
 * 3. the account's plan must grant the route's feature (403 FORBIDDEN).
 * Refused requests are counted too, so hammering a forbidden route still meets the limit.
 */
export function installAuthentication(app: FastifyInstance, deps: AuthenticationDeps): void {
  // Declared up front so every request object has the same shape; a property added to some requests
  // only makes each property read on every request slower.
  app.decorateRequest('caller', undefined);
  // Attached to each route that names a feature, with the feature at hand: routes without one (health,
  // documents) carry no hook, and no request pays for looking its route's options up.
  app.addHook('onRoute', (route) => {
    const feature = route.config?.feature;
    if (feature === undefined) return;
    const onRequest = route.onRequest;
    route.onRequest = [
      ...(onRequest === undefined ? [] : Array.isArray(onRequest) ? onRequest : [onRequest]),
      authenticationHook(deps, feature),
    ];
  });
}

/**
 * A callback hook: a key authenticated moments ago, counted by an in-process limiter (the common case on
 * one instance), is admitted without a promise; anything else takes the asynchronous path.
 */
function authenticationHook(deps: AuthenticationDeps, feature: Feature): onRequestHookHandler {
  return (request, reply, done) => {
    const presented = BEARER.exec(request.headers.authorization ?? '')?.[1];
    const cached = presented === undefined ? undefined : deps.accounts.cachedAuthentication(presented);
    if (cached !== undefined && deps.rateLimiter.hitNow !== undefined) {
      const rate = deps.rateLimiter.hitNow(cached.account.id, cached.account.rateLimit);
      if (admit(deps, request, reply, feature, cached, rate)) done();
      return;
    }
    authenticateAndCount(deps, presented).then((found) => {
      if (found === undefined) return refuseUnknownKey(request, reply);
      if (admit(deps, request, reply, feature, found, found.rate)) done();
    }, done);
  };
}

async function authenticateAndCount(deps: AuthenticationDeps, presented: string | undefined) {
  const found = presented === undefined ? undefined : await deps.accounts.authenticate(presented);
  if (found === undefined) return undefined;
  const rate = await countRequest(deps.rateLimiter, found.account.id, found.account.rateLimit);
  return { ...found, rate };
}

function refuseUnknownKey(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('www-authenticate', 'Bearer realm="gate402"');
  sendError(reply, request, new GatewayError('UNAUTHORIZED'));
}

/**
 * Steps 2 and 3 for an authenticated key: sets the rate-limit headers, answers 429 or 403 itself, and
 * otherwise records the caller. True when the request may go on to its route.
 */
function admit(
  deps: AuthenticationDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  feature: Feature,
  found: AuthenticatedKey,
  rate: RateLimitDecision,
): boolean {
  const { account } = found;
  setRateLimitHeaders(reply, account.plan, rate);
  if (!rate.allowed) {
    deps.onRateLimited?.(account.plan);
    const retryAfter = rate.resetSeconds;
    sendError(
      reply,
      request,
      new GatewayError('RATE_LIMIT_EXCEEDED', {
        message: `Rate limit of ${rate.limit} requests per minute exceeded; retry in ${retryAfter} s.`,
        retryAfter,
      }),
    );
    return false;
  }
  if (!deps.planAccess[account.plan].has(feature)) {
    sendError(
      reply,
      request,
      new GatewayError('FORBIDDEN', { message: `The ${account.plan} plan does not include ${feature}.` }),
    );
    return false;
  }
  request.caller = { account, key: found.key, rate };
  return true;
}

/**
 * Fails closed: when the shared counter (Redis) cannot be reached, requests are refused with 503 rather
 * than let through unlimited; /readyz reports the outage to the load balancer meanwhile.
 */
async function countRequest(
  limiter: RateLimiter,
  accountId: string,
  limit: number,
): Promise<RateLimitDecision> {
  try {
    return await limiter.hit(accountId, limit);
  } catch (error) {
    throw new GatewayError('SERVICE_UNAVAILABLE', {
      message: 'Rate limiting is unavailable; retry shortly.',
      retryAfter: 1,
      cause: error,
    });
  }
}

/** The caller of an authenticated route; a route without a feature has none. */
export function callerOf(request: FastifyRequest) {
  if (request.caller === undefined) throw new Error('route has no feature, so no caller is authenticated');
  return request.caller;
}

/**
 * RateLimit-Policy and RateLimit (IETF httpapi ratelimit-headers draft, structured-field syntax):
 * q = quota per window, w = window seconds, r = remaining, t = seconds until the window resets.
 */
function setRateLimitHeaders(reply: FastifyReply, policy: string, rate: RateLimitDecision): void {
  reply.header('ratelimit-policy', `"${policy}";q=${rate.limit};w=${RATE_WINDOW_SECONDS}`);
  reply.header('ratelimit', `"${policy}";r=${rate.remaining};t=${rate.resetSeconds}`);
}
