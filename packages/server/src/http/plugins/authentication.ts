import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { ApiKeyScope } from '../../domain/api-key-scope.ts';
import { RATE_WINDOW_MS } from '../../domain/plan.ts';
import type { Feature } from '../../domain/plan-access.ts';
import type { RateLimitDecision } from '../../ratelimit/rate-limiter.ts';
import type { Access, AccessPolicy } from '../../services/accounts/access-policy.ts';
import type { Door } from '../doors.ts';
import { sendError } from './errors.ts';

export interface AuthenticationDeps {
  readonly policy: AccessPolicy;
  /** Each guarded route is added here (see doors.ts). */
  readonly doors: Door[];
}

const BEARER = /^Bearer +(\S+)$/i;
const RATE_WINDOW_SECONDS = RATE_WINDOW_MS / 1000;

/**
 * Spec §5 and §8 for every route that names a feature, before its body is read: the access policy
 * (services/accounts/access-policy.ts) decides — key, rate limit, plan — and this hook answers its refusal
 * (401, 429, 403, with the rate-limit headers once counted) or records the caller.
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
    const scope = route.config?.scope;
    const keyOptional = route.config?.keyOptional === true;
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      deps.doors.push({ way: 'api', method, url: route.url, access: feature });
    }
    const onRequest = route.onRequest;
    route.onRequest = [
      ...(onRequest === undefined ? [] : Array.isArray(onRequest) ? onRequest : [onRequest]),
      authenticationHook(deps.policy, feature, scope, keyOptional),
    ];
  });
}

/**
 * A callback hook: a key authenticated moments ago, counted by an in-process limiter (the common case on
 * one instance), is decided without a promise; anything else takes the asynchronous path.
 */
function authenticationHook(
  policy: AccessPolicy,
  feature: Feature,
  scope: ApiKeyScope | undefined,
  keyOptional = false,
): onRequestHookHandler {
  return (request, reply, done) => {
    // A route open without a key (keyOptional) still decides a key that is given; without one, the
    // client address is counted instead of an account.
    if (keyOptional && request.headers.authorization === undefined) {
      policy.countAnonymous(request.ip).then(({ rate, error }) => {
        setRateLimitHeaders(reply, 'anonymous', rate);
        if (error === undefined) done();
        else sendError(reply, request, error);
      }, done);
      return;
    }
    const key = BEARER.exec(request.headers.authorization ?? '')?.[1];
    const now = policy.decideNow(key, feature, scope);
    if (now !== undefined) {
      if (admit(request, reply, now)) done();
      return;
    }
    policy.decide({ kind: 'key', key }, feature, { count: true, scope }).then((access) => {
      if (admit(request, reply, access)) done();
    }, done);
  };
}

/** Answers a refusal itself; otherwise records the caller. True when the request may go on to its route. */
function admit(request: FastifyRequest, reply: FastifyReply, access: Access): boolean {
  if (access.rate !== undefined) {
    setRateLimitHeaders(reply, access.ok ? access.account.plan : (access.plan ?? ''), access.rate);
  }
  if (!access.ok) {
    if (access.error.code === 'UNAUTHORIZED') reply.header('www-authenticate', 'Bearer realm="gate402"');
    sendError(reply, request, access.error);
    return false;
  }
  if (access.key === undefined || access.rate === undefined) {
    throw new Error('an API request is authenticated by a key and counted');
  }
  request.caller = { account: access.account, key: access.key, rate: access.rate };
  return true;
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
