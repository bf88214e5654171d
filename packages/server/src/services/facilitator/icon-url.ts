import { domainToASCII } from 'node:url';

/** The longest `resource.iconUrl` the catalogue keeps (x402's bazaar spec, "Service Metadata on `resource`"). */
export const ICON_URL_MAX_CHARS = 2_048;

/** Host names that name this machine whatever their spelling after IDN normalisation. */
const LOOPBACK_NAMES = new Set(['localhost', 'localhost.localdomain', 'ip6-localhost', 'ip6-loopback']);

/**
 * The seller's `resource.iconUrl` when the public listing may show it, else null (dropped silently, as the
 * spec asks of service metadata). The listing hands the URL to every visitor's browser or agent, which
 * may fetch it: so it must be an absolute http(s) URL without credentials whose host is a DNS name, not
 * this machine or an address written as a number in any of the forms URL parsers accept (dotted, one
 * decimal or hex integer, an IPv6 literal). The host is percent-decoded and IDN-normalised first, so a
 * full-width `ｌｏｃａｌｈｏｓｔ` or `localhost.` is judged as `localhost`. It does not resolve the name: DNS can point a
 * public name anywhere, which is the fetching client's to guard.
 */
export function safeIconUrl(value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > ICON_URL_MAX_CHARS) return null;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for.
  if (/[\u0000-\u001f\u007f]/.test(value)) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username !== '' || url.password !== '' || url.hostname.startsWith('[')) return null;
  let host: string;
  try {
    // A fully qualified name's trailing dot names the same host: `localhost.` is localhost.
    host = domainToASCII(decodeURIComponent(url.hostname)).toLowerCase().replace(/\.+$/, '');
  } catch {
    return null;
  }
  // Browsers resolve every `*.localhost` name to loopback themselves, without DNS (RFC 6761 §6.3).
  if (host === '' || LOOPBACK_NAMES.has(host) || host.endsWith('.localhost')) return null;
  if (/^[0-9.]+$/.test(host) || /^0x[0-9a-f]+$/.test(host)) return null;
  return value;
}
