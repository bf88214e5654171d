import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';

/**
 * What the proxy does to traffic from the gateway, chunk by chunk (so pooled keep-alive connections
 * are hit too, not only new ones).
 * - pass: forward both ways.
 * - drop: reset the connection (an endpoint that is down); open connections are reset when set.
 * - hang: swallow requests, never answer (an endpoint slower than any timeout).
 * - delay: forward each request after `ms`.
 * - http-error: answer every request `status` with a text body and close (a proxy or provider error).
 * - flap: alternate between pass and drop every `periodMs`.
 * - silent: connections stay open and requests still reach the target, but nothing it sends comes back
 *   (a PubSub endpoint that stops publishing while its socket stays up); open connections fall silent too.
 * - blackhole: nothing passes either way, on open connections and new ones, and nothing is closed (a
 *   host or network that went silent; a database behind a dead firewall).
 * `match`, when given, limits the fault to requests whose bytes contain it (e.g. one JSON-RPC
 * method); other requests pass.
 */
export type FaultMode =
  | { readonly kind: 'pass' }
  | { readonly kind: 'drop'; readonly match?: string }
  | { readonly kind: 'hang'; readonly match?: string }
  | { readonly kind: 'delay'; readonly ms: number; readonly match?: string }
  | { readonly kind: 'http-error'; readonly status: number; readonly match?: string }
  | { readonly kind: 'flap'; readonly periodMs: number }
  | { readonly kind: 'silent' }
  | { readonly kind: 'blackhole' };

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`; swap the scheme for WebSocket traffic. */
  readonly url: string;
  readonly port: number;
  set(mode: FaultMode): void;
  /** Requests that reached the target, by whether their bytes contain `text`. */
  forwarded(text: string): number;
  /** Requests that reached the proxy, whatever the fault then did to them, by whether they contain `text`. */
  received(text: string): number;
  /** Bytes from the target that reached the gateway, over all connections. */
  delivered(): number;
  /** Connections from the gateway open now. */
  openConnections(): number;
  close(): Promise<void>;
}

/** A real TCP proxy on a free loopback port in front of `target` (`http://host:port`). */
export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const { hostname, port: targetPort } = new URL(target);
  let mode: FaultMode = { kind: 'pass' };
  const sockets = new Set<Socket>();
  const clients = new Set<Socket>();
  let deliveredBytes = 0;
  const forwardedChunks: string[] = [];
  const receivedChunks: string[] = [];

  const effective = (chunk: string): FaultMode => {
    if (mode.kind === 'flap') {
      return Math.floor(Date.now() / mode.periodMs) % 2 === 0 ? { kind: 'pass' } : { kind: 'drop' };
    }
    if (
      mode.kind !== 'pass' &&
      mode.kind !== 'silent' &&
      mode.kind !== 'blackhole' &&
      mode.match !== undefined &&
      !chunk.includes(mode.match)
    ) {
      return { kind: 'pass' };
    }
    return mode;
  };

  const server: Server = createServer((client) => {
    sockets.add(client);
    clients.add(client);
    const upstream = connect(Number(targetPort), hostname);
    sockets.add(upstream);
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
      clients.delete(client);
    };
    client.on('error', closeBoth).on('close', closeBoth);
    upstream.on('error', closeBoth).on('close', closeBoth);
    upstream.on('data', (chunk: Buffer) => {
      if (client.destroyed || mode.kind === 'silent' || mode.kind === 'blackhole') return;
      deliveredBytes += chunk.length;
      client.write(chunk);
    });
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      receivedChunks.push(text);
      const now = effective(text);
      switch (now.kind) {
        case 'pass':
        case 'silent':
          forwardedChunks.push(text);
          upstream.write(chunk);
          return;
        case 'drop':
          client.resetAndDestroy();
          upstream.destroy();
          return;
        case 'hang':
        case 'blackhole':
          return;
        case 'delay':
          setTimeout(() => {
            if (upstream.destroyed) return;
            forwardedChunks.push(text);
            upstream.write(chunk);
          }, now.ms);
          return;
        case 'http-error': {
          const body = `upstream failure ${now.status}`;
          client.end(
            `HTTP/1.1 ${now.status} Injected Fault\r\ncontent-type: text/plain\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
          );
          upstream.destroy();
          return;
        }
        case 'flap':
          return;
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    set: (next) => {
      mode = next;
      // An endpoint that goes down takes its open connections (and subscriptions) with it.
      if (next.kind === 'drop' && next.match === undefined) {
        for (const socket of sockets) socket.destroy();
        sockets.clear();
      }
    },
    forwarded: (text) => forwardedChunks.filter((chunk) => chunk.includes(text)).length,
    received: (text) => receivedChunks.filter((chunk) => chunk.includes(text)).length,
    delivered: () => deliveredBytes,
    openConnections: () => clients.size,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
