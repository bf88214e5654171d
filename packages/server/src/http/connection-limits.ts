import type { Server } from 'node:http';
import { BlockList, isIP } from 'node:net';
import type { TrustProxy } from '../config.ts';

export interface ConnectionLimits {
  /** Time to receive a whole request, headers and body (REQUEST_TIMEOUT_MS). */
  readonly requestTimeoutMs: number;
  /** Idle time of a keep-alive connection between requests (KEEP_ALIVE_TIMEOUT_MS). */
  readonly keepAliveTimeoutMs: number;
}

/**
 * The node:http server properties that make the request timeout real, to be set on the server before it
 * listens. Fastify's own `requestTimeout` option alone does not: it sets `server.requestTimeout` after
 * the server is made, while Node fixed `headersTimeout` in the constructor (60 s, the smaller of 60 s and
 * its 5-minute default). Node's connection checker swaps the two when headersTimeout is the larger
 * (ConnectionsList::Expired in src/connection_list… of node), so a request whose headers were complete —
 * one that announced a body and never sent it — lived 60 s, and was looked at only every 30 s
 * (connectionsCheckingInterval, read when the server starts listening). With headers never allowed
 * longer than the whole request and a check several times per timeout, such a request gets 408 within
 * the timeout plus a quarter of it at most.
 */
export function serverTimeoutOptions(limits: ConnectionLimits) {
  const requestTimeout = limits.requestTimeoutMs;
  return {
    requestTimeout,
    headersTimeout: requestTimeout,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.max(25, Math.min(1_000, Math.floor(requestTimeout / 4))),
  };
}

/** Address ranges named as proxy-addr (Fastify's trustProxy) names them. */
const NAMED_RANGES: Readonly<Record<string, readonly [string, number][]>> = {
  loopback: [
    ['127.0.0.0', 8],
    ['::1', 128],
  ],
  linklocal: [
    ['169.254.0.0', 16],
    ['fe80::', 10],
  ],
  uniquelocal: [
    ['10.0.0.0', 8],
    ['172.16.0.0', 12],
    ['192.168.0.0', 16],
    ['fc00::', 7],
  ],
};

/**
 * Caps the connections one client address holds open at once (MAX_CONNECTIONS_PER_ADDRESS): one more is
 * closed as it arrives, before a byte is read, so one client cannot take every socket the process has
 * with slow or idle connections. Upgraded (WebSocket) connections count until they close. A proxy named
 * in TRUST_PROXY by address carries many clients and is not capped here (it should cap its own); with a
 * hop count the proxy's address is not known, so its connections are capped like any client's.
 */
export function capConnectionsPerAddress(server: Server, max: number, trustProxy: TrustProxy): void {
  if (max === 0) return;
  const trusted = trustedProxies(trustProxy);
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    const address = plainAddress(socket.remoteAddress ?? '');
    if (trusted?.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4') === true) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}

function trustedProxies(trustProxy: TrustProxy): BlockList | undefined {
  if (trustProxy === false || typeof trustProxy === 'number') return undefined;
  const list = new BlockList();
  for (const entry of trustProxy) {
    const ranges = NAMED_RANGES[entry];
    if (ranges !== undefined) {
      for (const [network, prefix] of ranges)
        list.addSubnet(network, prefix, isIP(network) === 6 ? 'ipv6' : 'ipv4');
      continue;
    }
    const [network = '', prefix] = entry.split('/');
    const type = isIP(network) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(network, type);
    else list.addSubnet(network, Number(prefix), type);
  }
  return list;
}

/** An IPv4 client seen by a dual-stack socket as ::ffff:a.b.c.d is the IPv4 address. */
export function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}
