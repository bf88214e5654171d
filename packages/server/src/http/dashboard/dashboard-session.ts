import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../../domain/gateway-error.ts';
import type { DashboardUserRecord } from '../../domain/records/dashboard-records.ts';
import type {
  ActiveSession,
  DashboardAuthService,
} from '../../services/dashboard-auth/dashboard-auth-service.ts';
import { sendError } from '../plugins/errors.ts';
import { readSessionCookie } from './session-cookie.ts';

export const CSRF_HEADER = 'x-csrf-token';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A dashboard API route that needs no session (sign-up, log-in, the public settings). */
    dashboardPublic?: boolean;
  }
  interface FastifyRequest {
    /** The logged-in dashboard session and its user, on dashboard API routes that need a session. */
    dashboardSession?: ActiveSession;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Guards every route of the dashboard API (installed inside its encapsulated plugin only):
 * 1. a state-changing request whose Origin is another site is refused (403), before anything else;
 * 2. unless the route is public, the session cookie must name an active session (401);
 * 3. a state-changing request must carry the session's CSRF token in X-CSRF-Token (403).
 * The token is given to the page by GET /dashboard/api/session; another site can neither read it
 * (same-origin policy) nor send the cookie (SameSite=Strict), so both defences must fail together.
 */
export function installDashboardSession(scope: FastifyInstance, auth: DashboardAuthService): void {
  scope.addHook('onRequest', async (request, reply) => {
    const changesState = !SAFE_METHODS.has(request.method);
    if (changesState && !sameOrigin(request)) {
      return sendError(
        reply,
        request,
        new GatewayError('FORBIDDEN', { message: 'Cross-site request refused.' }),
      );
    }
    if (request.routeOptions.config.dashboardPublic === true) return;
    const token = readSessionCookie(request);
    const session = token === undefined ? undefined : await auth.session(token);
    if (session === undefined) {
      return sendError(
        reply,
        request,
        new GatewayError('UNAUTHORIZED', { message: 'Log in to the dashboard first.' }),
      );
    }
    if (changesState && !sameToken(request.headers[CSRF_HEADER], session.csrfToken)) {
      return sendError(
        reply,
        request,
        new GatewayError('FORBIDDEN', { message: 'Missing or wrong CSRF token; reload the page.' }),
      );
    }
    request.dashboardSession = session;
  });
}

/** The logged-in user of a dashboard route that needs a session. */
export function dashboardUserOf(request: FastifyRequest): DashboardUserRecord {
  return dashboardSessionOf(request).user;
}

export function dashboardSessionOf(request: FastifyRequest): ActiveSession {
  if (request.dashboardSession === undefined) throw new Error('dashboard route without a session');
  return request.dashboardSession;
}

/** Browsers send Origin on every cross-site POST/DELETE; a request without one is not from a page. */
function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === request.host;
  } catch {
    return false;
  }
}

function sameToken(presented: string | string[] | undefined, expected: string): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
