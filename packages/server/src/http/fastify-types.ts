import type { ApiKeyScope } from '../domain/api-key-scope.ts';
import type { Feature } from '../domain/plan-access.ts';
import type { ApiKeyRecord } from '../domain/records/account-records.ts';
import type { RateLimitDecision } from '../ratelimit/rate-limiter.ts';
import type { AccountView } from '../services/accounts/account-service.ts';

/** Who is calling, set by the authentication plugin on every authenticated request. */
export interface Caller {
  readonly account: AccountView;
  readonly key: ApiKeyRecord;
  readonly rate: RateLimitDecision;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The plan feature this route belongs to. A route with a feature requires an API key whose plan
     * grants it; a route without one is public (health, OpenAPI, docs).
     */
    feature?: Feature;
    /** A key scope the route needs besides its feature (access-policy.ts step 4). */
    scope?: ApiKeyScope;
    /**
     * A request without an Authorization header reaches the route with no caller (the x402 bazaar's
     * public listing); one with a key is decided as on any route of the feature.
     */
    keyOptional?: boolean;
  }
  interface FastifyRequest {
    /** Set on authenticated routes; absent on public ones. */
    caller?: Caller;
  }
}
