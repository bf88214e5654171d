import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  type DashboardAuthService,
  MAX_EMAIL_LENGTH,
  MAX_PASSWORD_LENGTH,
  type NewSession,
} from '../../services/dashboard-auth/dashboard-auth-service.ts';
import { dashboardSessionOf } from './dashboard-session.ts';
import type { LiveStreamRegistry } from './live-stream-registry.ts';
import { clearedSessionCookie, readSessionCookie, sessionCookie } from './session-cookie.ts';

const Credentials = Type.Object(
  {
    email: Type.String({ minLength: 3, maxLength: MAX_EMAIL_LENGTH }),
    // The length rule is checked by the service, with its own message; this only bounds the work.
    password: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH }),
  },
  { additionalProperties: false },
);

const PasswordChange = Type.Object(
  {
    currentPassword: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH }),
    // The length rule is checked by the service, as for sign-up.
    newPassword: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH }),
  },
  { additionalProperties: false },
);

/** Sign-up, log-in, log-out, the current session and a password change. */
export async function dashboardAuthRoutes(
  app: FastifyInstance,
  opts: { auth: DashboardAuthService; streams: LiveStreamRegistry },
) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { auth } = opts;

  r.get('/config', { config: { dashboardPublic: true }, schema: { hide: true } }, async () => ({
    signupEnabled: auth.signupEnabled,
  }));

  r.post(
    '/signup',
    { config: { dashboardPublic: true }, schema: { hide: true, body: Credentials } },
    async (request, reply) => {
      const session = await auth.signUp(request.body, request.ip);
      await endPrevious(request, auth, session);
      return started(request, reply, session);
    },
  );

  r.post(
    '/login',
    { config: { dashboardPublic: true }, schema: { hide: true, body: Credentials } },
    async (request, reply) => {
      const session = await auth.logIn(request.body, request.ip);
      await endPrevious(request, auth, session);
      return started(request, reply, session);
    },
  );

  r.post('/logout', { schema: { hide: true } }, async (request, reply) => {
    const token = readSessionCookie(request);
    if (token !== undefined) await auth.logOut(token);
    opts.streams.endSession(dashboardSessionOf(request).id);
    reply.header('set-cookie', clearedSessionCookie(request.protocol === 'https'));
    return { loggedOut: true };
  });

  // Every session of the user ends, this one included; the answer logs this browser in again with a new
  // session (cookie and CSRF token), as log-in does.
  r.post('/password', { schema: { hide: true, body: PasswordChange } }, async (request, reply) => {
    const session = dashboardSessionOf(request);
    const renewed = await auth.changePassword(session, request.body);
    opts.streams.endUser(session.user.id);
    return started(request, reply, renewed);
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

/**
 * The session this browser held before a log-in or sign-up ends on the server, not only loses its cookie:
 * a session whose cookie was merely replaced would go on working for whoever kept a copy of it (the
 * previous user of a shared computer, say) until it expired. Its live streams end at their next beat.
 */
async function endPrevious(request: FastifyRequest, auth: DashboardAuthService, session: NewSession) {
  const previous = readSessionCookie(request);
  if (previous !== undefined && previous !== session.token) await auth.logOut(previous);
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
