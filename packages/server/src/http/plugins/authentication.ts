import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../../domain/gateway-error.ts';
import { RATE_WINDOW_MS } from '../../domain/plan.ts';
import type { PlanAccess } from '../../domain/plan-access.ts';
import type { RateLimitDecision, RateLimiter } from '../../ratelimit/rate-limiter.ts';
import type { AccountService } from '../../services/account-service.ts';
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
  app.addHook('onRequest', async (request, reply) => {
    const feature = request.routeOptions.config.feature;
    if (feature === undefined) return;

    const presented = BEARER.exec(request.headers.authorization ?? '')?.[1];
    const found = presented === undefined ? undefined : await deps.accounts.authenticate(presented);
    if (found === undefined) {
      reply.header('www-authenticate', 'Bearer realm="gate402"');
      return sendError(reply, request, new GatewayError('UNAUTHORIZED'));
    }

    const { account } = found;
    const rate = await countRequest(deps.rateLimiter, account.id, account.rateLimit);
    setRateLimitHeaders(reply, account.plan, rate);
    if (!rate.allowed) {
      deps.onRateLimited?.(account.plan);
      const retryAfter = rate.resetSeconds;
      return sendError(
        reply,
        request,
        new GatewayError('RATE_LIMIT_EXCEEDED', {
          message: `Rate limit of ${rate.limit} requests per minute exceeded; retry in ${retryAfter} s.`,
          retryAfter,
        }),
      );
    }

    if (!deps.planAccess[account.plan].has(feature)) {
      return sendError(
        reply,
        request,
        new GatewayError('FORBIDDEN', { message: `The ${account.plan} plan does not include ${feature}.` }),
      );
    }
    request.caller = { account, key: found.key, rate };
  });
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
