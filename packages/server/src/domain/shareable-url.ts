/**
 * The URL as callers may see it, or null when it may carry a secret. Providers put API keys in the
 * path (`/v3/<key>`, `/v2/<key>`), the query (`?api-key=…`) or the user part (`https://key@host`), and
 * nothing tells a key from an innocent path; so only a bare scheme://host[:port][/] is shared. A
 * shortened URL (scheme and host alone) would not reach the same endpoint, so it is withheld instead.
 */
export function shareableUrl(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const bare =
    parsed.username === '' &&
    parsed.password === '' &&
    (parsed.pathname === '/' || parsed.pathname === '') &&
    parsed.search === '' &&
    parsed.hash === '';
  return bare ? url : null;
}
