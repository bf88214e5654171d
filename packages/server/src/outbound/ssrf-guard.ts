import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * The SSRF guard for every outbound call to a URL a caller chose (webhook endpoints, facilitatorUrl).
 *
 * A URL is refused unless every address its host resolves to is public: loopback, private (RFC 1918,
 * ULA), link-local (cloud metadata at 169.254.169.254 lives there), CGNAT, multicast, unspecified and
 * the other special-purpose ranges are refused, as are IPv4-mapped IPv6 forms of them. Checking once
 * and connecting later would let DNS rebinding answer a public address to the check and a private one
 * to the connection, so `resolveOutbound` returns the checked addresses and `pinnedLookup` makes the
 * connection use exactly those: the request never asks DNS again.
 *
 * `allowPrivate` (the ALLOW_PRIVATE_OUTBOUND_URLS setting) lifts the address check for development and
 * tests, where receivers listen on 127.0.0.1; it also allows plain http://.
 */
export interface OutboundPolicy {
  readonly allowPrivate: boolean;
  /**
   * Ports a URL may name (OUTBOUND_PORTS); default 443 and 80 (plain http itself only with allowPrivate).
   * An internal service on another port of a public address is out of reach. allowPrivate lifts it too.
   */
  readonly ports?: readonly number[];
}

export const DEFAULT_OUTBOUND_PORTS: readonly number[] = [443, 80];

/**
 * The one answer for a host that is private, special-purpose or cannot be resolved: different answers
 * would let a caller probe which internal names exist.
 */
const NOT_ALLOWED = 'must not point at a private, loopback or link-local address';

/** Why a URL was refused; `reason` is safe to show to the caller who supplied the URL. */
export class OutboundUrlError extends Error {
  override readonly name = 'OutboundUrlError';
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** A URL that passed the guard, with the addresses a connection to it may use. */
export interface ResolvedOutbound {
  readonly url: URL;
  readonly addresses: readonly { address: string; family: 4 | 6 }[];
}

const BLOCKED = new BlockList();
for (const [network, prefix] of [
  // Every block of the IANA IPv4 Special-Purpose Address Registry, globally reachable or not: none is a
  // place a webhook or facilitator lives.
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // CGNAT (RFC 6598)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // TEST-NET-1
  ['192.31.196.0', 24], // AS112-v4
  ['192.52.193.0', 24], // AMT
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // RFC 1918
  ['192.175.48.0', 24], // direct delegation AS112 service
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2
  ['203.0.113.0', 24], // TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  // IPv4-compatible ::a.b.c.d (deprecated, RFC 4291): a URL spells [::127.0.0.1] as [::7f00:1], a form
  // the embedded-IPv4 check below does not read, so the whole range is refused.
  ['::', 96],
  ['::ffff:0:0:0', 96], // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765)
  // Every block of the IANA IPv6 Special-Purpose Address Registry, and the deprecated site-local range.
  ['64:ff9b::', 96], // NAT64 well-known prefix (embeds IPv4)
  ['64:ff9b:1::', 48], // NAT64 local-use prefix (RFC 8215): translates to whatever the operator's NAT64 reaches
  ['100::', 64], // discard
  ['100:0:0:1::', 64], // dummy prefix (RFC 9780)
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHID, …)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4 (embeds IPv4)
  ['2620:4f:8000::', 48], // direct delegation AS112 service
  ['3fff::', 20], // documentation (RFC 9637)
  ['5f00::', 16], // segment routing SIDs (RFC 9602)
  ['fc00::', 7], // unique local (ULA)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated by RFC 3879, still routed inside some networks)
  ['ff00::', 8], // multicast
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv6');
}

/** True when `address` (IPv4 or IPv6 text) is in a range outbound calls must not reach. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  const mapped = embeddedIpv4(address);
  if (mapped !== undefined && BLOCKED.check(mapped, 'ipv4')) return true;
  return BLOCKED.check(address, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) or IPv4-compatible IPv6 address. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted !== null) return dotted[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex === null) return undefined;
  const high = Number.parseInt(hex[1] ?? '0', 16);
  const low = Number.parseInt(hex[2] ?? '0', 16);
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/**
 * Checks the URL's form only (scheme, no credentials): what can be said without DNS, e.g. when the URL
 * is registered. `resolveOutbound` must still run before each connection.
 */
export function checkOutboundUrl(raw: string, policy: OutboundPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundUrlError('must be an absolute URL');
  }
  const schemes = policy.allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    throw new OutboundUrlError(policy.allowPrivate ? 'must be an http(s) URL' : 'must be an https:// URL');
  }
  if (url.username !== '' || url.password !== '') {
    throw new OutboundUrlError('must not carry a user name or password');
  }
  const host = bareHost(url);
  if (!policy.allowPrivate && isIP(host) !== 0 && isForbiddenAddress(host)) {
    throw new OutboundUrlError(NOT_ALLOWED);
  }
  if (!policy.allowPrivate) {
    const port = Number(url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : url.port);
    const ports = policy.ports ?? DEFAULT_OUTBOUND_PORTS;
    if (!ports.includes(port)) {
      throw new OutboundUrlError(`must use port ${ports.join(' or ')}`);
    }
  }
  return url;
}

/**
 * Checks the URL and resolves its host; refuses it when any resolved address is forbidden (a host
 * answering one public and one private address could otherwise be steered to the private one).
 */
export async function resolveOutbound(
  raw: string,
  policy: OutboundPolicy,
  resolve: (host: string) => Promise<{ address: string; family: number }[]> = (host) =>
    dnsLookup(host, { all: true, verbatim: true }),
): Promise<ResolvedOutbound> {
  const url = checkOutboundUrl(raw, policy);
  const host = bareHost(url);
  let found: { address: string; family: number }[];
  if (isIP(host) !== 0) {
    found = [{ address: host, family: isIP(host) }];
  } else {
    try {
      found = await resolve(host);
    } catch {
      // The same answer as a private address: which internal names resolve is not the caller's to learn.
      throw new OutboundUrlError(policy.allowPrivate ? `host ${host} cannot be resolved` : NOT_ALLOWED);
    }
  }
  if (found.length === 0) {
    throw new OutboundUrlError(policy.allowPrivate ? `host ${host} cannot be resolved` : NOT_ALLOWED);
  }
  if (!policy.allowPrivate && found.some((a) => isForbiddenAddress(a.address))) {
    throw new OutboundUrlError(NOT_ALLOWED);
  }
  return {
    url,
    addresses: found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })),
  };
}

/**
 * A `lookup` for http(s).request / net.connect that answers only the addresses already checked, so
 * the connection goes where the guard looked (no second DNS answer can rebind it). TLS still verifies
 * the certificate against the URL's host name, since the request keeps its `host`/`servername`.
 */
export function pinnedLookup(resolved: ResolvedOutbound): LookupFunction {
  const addresses = resolved.addresses;
  return (_hostname, options, callback) => {
    const wanted = typeof options === 'object' && options !== null ? options : {};
    const family = 'family' in wanted ? wanted.family : undefined;
    const usable = addresses.filter((a) => family === undefined || family === 0 || a.family === family);
    const first = usable[0];
    if (first === undefined) {
      callback(new OutboundUrlError('no checked address of the requested family'), '', 4);
      return;
    }
    if ('all' in wanted && wanted.all === true) {
      (callback as unknown as (e: null, all: { address: string; family: number }[]) => void)(null, usable);
      return;
    }
    callback(null, first.address, first.family);
  };
}

/** The host without IPv6 brackets. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}
