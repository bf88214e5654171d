import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';

/**
 * A small HTTP/1.1 load generator for POST bodies that are each sent once (payment proofs are redeemed
 * once), on keep-alive connections to 127.0.0.1. Requests are written as prepared bytes and answers are
 * read by their Content-Length only, so the generator spends little of the CPU it shares with the server
 * on this 2-core machine: against a bare Fastify POST route, autocannon at 100 connections gave p99 of
 * 22–40 ms because the generator itself was the bottleneck, this gives 9–24 ms closed loop and 3–5 ms at
 * 1,000 requests/s.
 */
export interface LeanTarget {
  readonly port: number;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Each request with an Idempotency-Key of its own, as the SDK sends every receive (#31). */
  readonly idempotencyKeys?: boolean;
}

export interface LeanResult {
  /** Answers per second over the pass. */
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Answers other than 2xx. */
  readonly failed: number;
}

/**
 * Closed loop: `connections` connections each send their next body as soon as the previous answer
 * arrives, until every body was sent once. With no pause between requests the server is always
 * saturated, so the latency is mostly queueing: about `connections` ÷ throughput. Each connection's first
 * request also waited for the connection to open and is left out of the percentiles.
 */
export function closedLoop(target: LeanTarget, bodies: readonly string[], connections: number) {
  return run(target, bodies, connections, undefined);
}

/**
 * Open loop: bodies are due at a fixed rate (`perSecond`, evenly spaced), spread over `connections`
 * connections in turn; a request whose connection is still busy waits for it. Latency runs from when a
 * request was due, not from when it was written, so a server that falls behind is charged for the
 * queue it causes (no coordinated omission) — the latency a client sending at that rate sees.
 */
export function openLoop(
  target: LeanTarget,
  bodies: readonly string[],
  connections: number,
  perSecond: number,
) {
  return run(target, bodies, connections, perSecond);
}

async function run(
  target: LeanTarget,
  bodies: readonly string[],
  connectionCount: number,
  perSecond: number | undefined,
): Promise<LeanResult> {
  const requests = bodies.map((body) => request(target, body));
  const sockets = await Promise.all(
    Array.from({ length: Math.min(connectionCount, requests.length) }, () => open(target.port)),
  );
  const latencies: number[] = [];
  let failed = 0;
  let answered = 0;
  let next = 0;
  const started = performance.now();
  try {
    await new Promise<void>((resolve, reject) => {
      const connections = sockets.map((socket) => {
        const queue: { index: number; dueAt: number; counted: boolean }[] = [];
        let inFlight: { dueAt: number; counted: boolean } | undefined;
        let buffer: Buffer = Buffer.alloc(0);
        const pump = () => {
          if (inFlight !== undefined) return;
          const item = queue.shift();
          if (item === undefined) return;
          inFlight = item;
          socket.write(requests[item.index] ?? Buffer.alloc(0));
        };
        socket.on('error', reject);
        socket.on('data', (chunk: Buffer) => {
          buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
          for (;;) {
            const answer = readAnswer(buffer);
            if (answer === undefined) return;
            buffer = buffer.subarray(answer.length);
            if (answer.status < 200 || answer.status > 299) failed++;
            if (inFlight?.counted === true) latencies.push(performance.now() - inFlight.dueAt);
            inFlight = undefined;
            answered++;
            if (answered === requests.length) return resolve();
            if (perSecond === undefined && next < requests.length)
              queue.push({ index: next++, dueAt: performance.now(), counted: true });
            pump();
          }
        });
        return { queue, pump };
      });
      if (perSecond === undefined) {
        for (const connection of connections) {
          connection.queue.push({ index: next++, dueAt: performance.now(), counted: false });
          connection.pump();
        }
        return;
      }
      const interval = 1000 / perSecond;
      const release = () => {
        const now = performance.now();
        while (next < requests.length && started + next * interval <= now) {
          const connection = connections[next % connections.length];
          connection?.queue.push({ index: next, dueAt: started + next * interval, counted: true });
          next++;
          connection?.pump();
        }
        if (next < requests.length) setTimeout(release, Math.max(0, started + next * interval - now));
      };
      release();
    });
  } finally {
    for (const socket of sockets) socket.destroy();
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round((latencies[Math.floor(latencies.length * q)] ?? 0) * 10) / 10;
  return { perSecond: answered / seconds, p50Ms: at(0.5), p99Ms: at(0.99), failed };
}

function request(target: LeanTarget, body: string): Buffer {
  const headers = Object.entries({
    ...target.headers,
    ...(target.idempotencyKeys === true ? { 'idempotency-key': `bench-${randomUUID()}` } : {}),
    'content-type': 'application/json',
  })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return Buffer.from(
    `POST ${target.path} HTTP/1.1\r\nhost: 127.0.0.1\r\n${headers}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.setNoDelay(true);
    socket.once('error', reject);
  });
}

/** One whole answer at the start of `buffer` (status and total length), or undefined if not all there. */
function readAnswer(buffer: Buffer): { status: number; length: number } | undefined {
  const headEnd = buffer.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const head = buffer.subarray(0, headEnd).toString('latin1');
  const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
  if (length === undefined)
    throw new Error('an answer without Content-Length (chunked answers are not read here)');
  const total = headEnd + 4 + Number(length);
  if (buffer.length < total) return undefined;
  return { status: Number(head.slice(9, 12)), length: total };
}
