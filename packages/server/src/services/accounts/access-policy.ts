import type { ApiKeyScope } from '../../domain/api-key-scope.ts';
import { GatewayError } from '../../domain/gateway-error.ts';
import type { Feature, PlanAccess } from '../../domain/plan-access.ts';
import type { ApiKeyRecord } from '../../domain/records/account-records.ts';
import type { RateLimitDecision, RateLimiter } from '../../ratelimit/rate-limiter.ts';
import type { AccountService, AccountView, AuthenticatedKey } from './account-service.ts';

/**
 * What a caller presents at one of the gateway's doors:
 * - `key`: an API key — the HTTP API's Bearer header, the payment stream's upgrade or `auth` message;
 * - `key-digest`: the SHA-256 of a key an open stream authenticated with, asked again at each heartbeat;
 * - `account`: a dashboard session's account (the session itself is checked by the dashboard's guard,
 *   which also checks its CSRF token; undefined when there is no active session).
 */
export type Credentials =
  | { readonly kind: 'key'; readonly key: string | undefined }
  | { readonly kind: 'key-digest'; readonly digest: Buffer }
  | { readonly kind: 'account'; readonly accountId: string | undefined };

export type Access =
  | {
      readonly ok: true;
      readonly account: AccountView;
      /** The API key presented; absent for a dashboard session. */
      readonly key: ApiKeyRecord | undefined;
      /** The count this request added, when it was counted. */
      readonly rate: RateLimitDecision | undefined;
    }
  | {
      readonly ok: false;
      readonly error: GatewayError;
      /** The count, when the refusal came after counting (429, 403): the answer still carries it. */
      readonly rate: RateLimitDecision | undefined;
      readonly plan: string | undefined;
    };

export interface AccessPolicyDeps {
  readonly accounts: AccountService;
  readonly rateLimiter: RateLimiter;
  readonly planAccess: PlanAccess;
  /** Told about each refusal by the rate limit, with the account's plan (metrics). */
  readonly onRateLimited?: (plan: string) => void;
}

/**
 * Requests per minute one client address may make without a key to a door open to it (keyOptional: the
 * x402 bazaar's public listing and search), over every such door and every instance sharing the counter.
 */
export const ANONYMOUS_RATE_LIMIT = 60;

/**
 * The one authorization policy of every door (README, "Plans and rate limits"): the HTTP API, the
 * payment stream's upgrade, its `auth` message and its heartbeat re-check, the dashboard API and its
 * live list all ask `decide` (or its synchronous twin `decideNow`), with the feature the door belongs
 * to. In order:
 * 1. authentication — the key (or session) must be active: 401 UNAUTHORIZED, the same answer whatever
 *    was wrong;
 * 2. rate limit — when `count` (every API request and stream attempt; a dashboard session's own requests
 *    and a heartbeat re-check are not API use) the request is counted against the account's per-minute
 *    limit over all its keys: 429 RATE_LIMIT_EXCEEDED; refused requests are counted too, so hammering a
 *    forbidden door still meets the limit; when the counter is unreachable, 503 (fail closed);
 * 3. plan — the account's plan must grant the feature (the PLAN_ACCESS table): 403 FORBIDDEN;
 * 4. scope — a door that needs a key scope (`admin`: reading and setting spend policies) refuses a key
 *    without it: 403 FORBIDDEN. A dashboard session is the account owner's and passes.
 */
export class AccessPolicy {
  constructor(private readonly deps: AccessPolicyDeps) {}

  /**
   * The decision without a promise, when one can be made without a round trip: the key was
   * authenticated moments ago and the limiter counts in this process (the common case on one instance,
   * on every API request). Undefined: ask `decide`.
   */
  decideNow(key: string | undefined, feature: Feature, scope?: ApiKeyScope): Access | undefined {
    const hitNow = this.deps.rateLimiter.hitNow;
    if (key === undefined || hitNow === undefined) return undefined;
    const cached = this.deps.accounts.cachedAuthentication(key);
    if (cached === undefined) return undefined;
    return this.judge(
      cached,
      feature,
      hitNow.call(this.deps.rateLimiter, cached.account.id, cached.account.rateLimit),
      scope,
    );
  }

  async decide(
    credentials: Credentials,
    feature: Feature,
    options: { count: boolean; scope?: ApiKeyScope | undefined },
  ): Promise<Access> {
    const found = await this.authenticate(credentials);
    if (found === undefined) {
      return { ok: false, error: unauthorized(credentials), rate: undefined, plan: undefined };
    }
    const rate = options.count ? await this.count(found.account) : undefined;
    return this.judge(found, feature, rate, options.scope);
  }

  /**
   * Why a plan may not use a feature. The facilitator's says more: a stock x402 seller (`@x402/express`
   * and the like) given such a key fails at start — GET /facilitator/supported is refused, and all its
   * owner sees is a 500 on every paid route and this message in its log.
   */
  private refusalOf(plan: AccountView['plan'], feature: Feature): string {
    if (feature !== 'facilitator') return `The ${plan} plan does not include ${feature}.`;
    const plans = (Object.keys(this.deps.planAccess) as AccountView['plan'][]).filter((p) =>
      this.grants(p, feature),
    );
    const which = plans.length === 0 ? 'no plan here does' : `${plans.join(' or ')} do`;
    // Stock x402 sellers log only the first 200 characters of the refusal's body: the point comes first.
    return `The ${plan} plan does not include facilitator (${which}): an x402 seller using this key cannot start. The x402 facilitator is GET /facilitator/supported, POST /facilitator/verify and /facilitator/settle.`;
  }

  /**
   * A door open without a key, asked without one: counted per client address (ANONYMOUS_RATE_LIMIT), so
   * the public listing cannot be called without bound; 429 past it, and 503 when the counter is
   * unreachable (fail closed, as for keys).
   */
  async countAnonymous(address: string): Promise<{ rate: RateLimitDecision; error?: GatewayError }> {
    let rate: RateLimitDecision;
    try {
      rate = await this.deps.rateLimiter.hit(`anonymous:${address}`, ANONYMOUS_RATE_LIMIT);
    } catch (error) {
      throw new GatewayError('SERVICE_UNAVAILABLE', {
        message: 'Rate limiting is unavailable; retry shortly.',
        retryAfter: 1,
        cause: error,
      });
    }
    if (rate.allowed) return { rate };
    return {
      rate,
      error: new GatewayError('RATE_LIMIT_EXCEEDED', {
        message: `Rate limit of ${rate.limit} requests per minute without an API key exceeded; retry in ${rate.resetSeconds} s, or send your key.`,
        retryAfter: rate.resetSeconds,
      }),
    };
  }

  /** Whether the plan grants the feature; for a door that authenticated and counted already. */
  grants(plan: AccountView['plan'], feature: Feature): boolean {
    return this.deps.planAccess[plan].has(feature);
  }

  private async authenticate(
    credentials: Credentials,
  ): Promise<{ account: AccountView; key: ApiKeyRecord | undefined } | undefined> {
    switch (credentials.kind) {
      case 'key':
        return credentials.key === undefined ? undefined : this.deps.accounts.authenticate(credentials.key);
      case 'key-digest':
        return this.deps.accounts.authenticateDigest(credentials.digest);
      case 'account':
        if (credentials.accountId === undefined) return undefined;
        return this.deps.accounts.getAccount(credentials.accountId).then(
          (account) => ({ account, key: undefined }),
          // A session whose account is gone opens nothing.
          (error: unknown) => {
            if (error instanceof GatewayError && error.code === 'NOT_FOUND') return undefined;
            throw error;
          },
        );
    }
  }

  /** Steps 2 to 4, on an authenticated caller and the count its request made (if counted). */
  private judge(
    found: AuthenticatedKey | { account: AccountView; key: undefined },
    feature: Feature,
    rate: RateLimitDecision | undefined,
    scope: ApiKeyScope | undefined,
  ): Access {
    const { account } = found;
    if (rate !== undefined && !rate.allowed) {
      this.deps.onRateLimited?.(account.plan);
      return {
        ok: false,
        error: new GatewayError('RATE_LIMIT_EXCEEDED', {
          message: `Rate limit of ${rate.limit} requests per minute exceeded; retry in ${rate.resetSeconds} s.`,
          retryAfter: rate.resetSeconds,
        }),
        rate,
        plan: account.plan,
      };
    }
    if (!this.grants(account.plan, feature)) {
      return {
        ok: false,
        error: new GatewayError('FORBIDDEN', { message: this.refusalOf(account.plan, feature) }),
        rate,
        plan: account.plan,
      };
    }
    if (scope !== undefined && found.key !== undefined && !found.key.scopes.includes(scope)) {
      return {
        ok: false,
        error: new GatewayError('FORBIDDEN', {
          message: `This API key does not have the ${scope} scope; use a key created with it (CLI or dashboard).`,
        }),
        rate,
        plan: account.plan,
      };
    }
    return { ok: true, account, key: found.key, rate };
  }

  /**
   * Fails closed: when the shared counter (Redis) cannot be reached, the request is refused with 503
   * rather than let through unlimited; /readyz reports the outage to the load balancer meanwhile.
   */
  private async count(account: AccountView): Promise<RateLimitDecision> {
    try {
      return await this.deps.rateLimiter.hit(account.id, account.rateLimit);
    } catch (error) {
      throw new GatewayError('SERVICE_UNAVAILABLE', {
        message: 'Rate limiting is unavailable; retry shortly.',
        retryAfter: 1,
        cause: error,
      });
    }
  }
}

function unauthorized(credentials: Credentials): GatewayError {
  return credentials.kind === 'account'
    ? new GatewayError('UNAUTHORIZED', { message: 'Log in to the dashboard first.' })
    : new GatewayError('UNAUTHORIZED');
}
