import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  type DashboardAuthService,
  MAX_EMAIL_LENGTH,
  MAX_PASSWORD_LENGTH,
  type NewSession,
} from '../../services/dashboard/dashboard-auth-service.ts';
import { dashboardSessionOf } from './dashboard-session.ts';
import { clearedSessionCookie, readCookie, SESSION_COOKIE, sessionCookie } from './session-cookie.ts';

const Credentials = Type.Object(
  {
    email: Type.String({ minLength: 3, maxLength: MAX_EMAIL_LENGTH }),
    // The length rule is checked by the service, with its own message; this only bounds the work.
    password: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH }),
  },
  { additionalProperties: false },
);

/** Sign-up, log-in, log-out and the current session. */
export async function dashboardAuthRoutes(app: FastifyInstance, opts: { auth: DashboardAuthService }) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { auth } = opts;

  r.get('/config', { config: { dashboardPublic: true }, schema: { hide: true } }, async () => ({
    signupEnabled: auth.signupEnabled,
  }));

  r.post(
    '/signup',
    { config: { dashboardPublic: true }, schema: { hide: true, body: Credentials } },
    async (request, reply) => started(request, reply, await auth.signUp(request.body, request.ip)),
  );

  r.post(
    '/login',
    { config: { dashboardPublic: true }, schema: { hide: true, body: Credentials } },
    async (request, reply) => started(request, reply, await auth.logIn(request.body, request.ip)),
  );

  r.post('/logout', { schema: { hide: true } }, async (request, reply) => {
    const token = readCookie(request.headers.cookie, SESSION_COOKIE);
    if (token !== undefined) await auth.logOut(token);
    reply.header('set-cookie', clearedSessionCookie(request.protocol === 'https'));
    return { loggedOut: true };
  });

  // The page asks this on load: who is logged in, and the CSRF token for its state-changing requests.
  r.get('/session', { schema: { hide: true } }, async (request) => {
    const session = dashboardSessionOf(request);
    return {
      email: session.user.email,
      accountId: session.user.accountId,
      csrfToken: session.csrfToken,
      expiresAt: session.expiresAt,
    };
  });
}

function started(request: FastifyRequest, reply: FastifyReply, session: NewSession) {
  reply.header(
    'set-cookie',
    sessionCookie(session.token, { expiresAt: session.expiresAt, secure: request.protocol === 'https' }),
  );
  return {
    email: session.user.email,
    accountId: session.user.accountId,
    csrfToken: session.csrfToken,
    expiresAt: session.expiresAt,
  };
}
