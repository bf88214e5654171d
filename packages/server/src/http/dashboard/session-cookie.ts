import type { FastifyRequest } from 'fastify';

/** The dashboard's session cookie: its name, how it is read from a request and written to a reply. */
export const SESSION_COOKIE = 'gate402_session';

/**
 * Its name over TLS. Browsers take a `__Host-` cookie only from this very host, over TLS, Secure, with
 * Path=/ and no Domain, so a page elsewhere (a sibling subdomain, a plain-http page on the way) cannot plant
 * one. Without the prefix, such a page could set its own session's cookie for Path=/dashboard/api: the
 * browser sends the longer path first, and the victim, logged in, would work in the attacker's account
 * (make keys and wallets there, see their payments as the victim's own).
 */
export const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;

/** The value of one cookie in a Cookie header, or undefined. Values are base64url, so no decoding is needed. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The session token a request carries, under the name its scheme uses (over TLS, only the `__Host-` one). */
export function readSessionCookie(request: FastifyRequest): string | undefined {
  return readCookie(
    request.headers.cookie,
    request.protocol === 'https' ? SECURE_SESSION_COOKIE : SESSION_COOKIE,
  );
}

/**
 * HttpOnly: page scripts never see it. SameSite=Strict: no other site's page can make the browser send
 * it. Over TLS (directly, or per X-Forwarded-Proto with TRUST_PROXY) it is `__Host-gate402_session`,
 * Secure and Path=/ (as the prefix demands), so it never travels in clear text and nobody else can set it;
 * over plain http (a gateway on localhost) it is `gate402_session` with Path=/dashboard. The API under /
 * reads no cookie, whichever it receives.
 */
export function sessionCookie(value: string, options: { expiresAt: number; secure: boolean }): string {
  return [
    `${options.secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE}=${value}`,
    options.secure ? 'Path=/' : 'Path=/dashboard',
    'HttpOnly',
    'SameSite=Strict',
    `Expires=${new Date(options.expiresAt).toUTCString()}`,
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}

export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie('', { expiresAt: 0, secure });
}
