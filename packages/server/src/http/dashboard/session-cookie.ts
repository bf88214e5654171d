/** The dashboard's session cookie: its name, how it is read from a request and written to a reply. */
export const SESSION_COOKIE = 'gate402_session';

/** The value of one cookie in a Cookie header, or undefined. Values are base64url, so no decoding is needed. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * HttpOnly: page scripts never see it. SameSite=Strict: no other site's page can make the browser send
 * it. Secure when the request came over TLS (directly, or per X-Forwarded-Proto with TRUST_PROXY), so
 * it never travels in clear text afterwards. Path=/dashboard: the API under / never receives it.
 */
export function sessionCookie(value: string, options: { expiresAt: number; secure: boolean }): string {
  return [
    `${SESSION_COOKIE}=${value}`,
    'Path=/dashboard',
    'HttpOnly',
    'SameSite=Strict',
    `Expires=${new Date(options.expiresAt).toUTCString()}`,
    ...(options.secure ? ['Secure'] : []),
  ].join('; ');
}

export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie('', { expiresAt: 0, secure });
}
