/**
 * `allowedHosts` of a spend policy: the resource a payment is for must be an http(s) URL whose host is
 * listed, compared as the URL parser spells it (lower case, IDNs in punycode, no trailing dot). An entry
 * `*.example.com` matches every subdomain of example.com, not example.com itself. A payment that names
 * no resource, or one that is not such a URL, matches nothing.
 */
export function hostAllowed(allowed: readonly string[], resource: string | null): boolean {
  const host = hostOf(resource);
  if (host === undefined) return false;
  return allowed.some((entry) =>
    entry.startsWith('*.') ? host.endsWith(entry.slice(1)) && host.length > entry.length - 1 : host === entry,
  );
}

/** The host a resource URL names, in its canonical spelling; undefined when it is not an http(s) URL. */
export function hostOf(resource: string | null): string | undefined {
  if (resource === null) return undefined;
  let url: URL;
  try {
    url = new URL(resource);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  return withoutTrailingDot(url.hostname);
}

/**
 * An allow-list entry as stored: a host name, or `*.` and a host name, spelled as a URL's host is.
 * Undefined when the entry is neither (a URL, a path, a port, an empty name).
 */
export function normalisedHostEntry(entry: string): string | undefined {
  const text = entry.trim();
  const wildcard = text.startsWith('*.');
  const name = wildcard ? text.slice(2) : text;
  if (name === '' || /[/:@?#\s*]/.test(name)) return undefined;
  const host = hostOf(`https://${name}/`);
  if (host === undefined || host === '') return undefined;
  return wildcard ? `*.${host}` : host;
}

function withoutTrailingDot(host: string): string {
  return host.endsWith('.') ? host.slice(0, -1) : host;
}
