import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { GatewayError, invalidParameters, toErrorBody } from '../../domain/gateway-error.ts';
import type { Access, AccessPolicy, Credentials } from '../../services/accounts/access-policy.ts';
import type { EventHub } from '../event-hub.ts';
import { MAX_STREAM_MESSAGE_BYTES, STREAM_CLOSE } from './stream-close-codes.ts';
import { StreamConnection } from './stream-connection.ts';
import { isEventId, parseSubscribe } from './stream-subscription.ts';

export const STREAM_PATH = '/v1/payments/stream';

export interface PaymentStreamDeps {
  readonly hub: EventHub;
  /** Decides every attempt, `auth` message, replay and heartbeat re-check, for the `stream` feature. */
  readonly policy: AccessPolicy;
  readonly heartbeatMs: number;
  readonly maxBufferedBytes: number;
  /** Connections one account may hold open on this instance; another one is refused. */
  readonly maxConnectionsPerAccount: number;
  /** How long a connection without credentials on the upgrade may take to send its `auth` message. */
  readonly authTimeoutMs?: number;
  /**
   * Connections without credentials that may wait for their `auth` message at once (STREAM_MAX_UNAUTHENTICATED),
   * and a tenth of that (at least 1) per client address: a connection nobody has authenticated costs a
   * socket and a timer, so an upgrade past either is refused with 429 before it is accepted.
   */
  readonly maxUnauthenticated?: number;
}

const DEFAULT_AUTH_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_UNAUTHENTICATED = 1_000;
/** Client messages read but not yet handled, per connection, before it stops reading more. */
const MAX_PENDING_MESSAGES = 16;
const BEARER = /^Bearer +(\S+)$/i;
/** The close reason when an account already holds STREAM_MAX_CONNECTIONS_PER_ACCOUNT connections. */
const TOO_MANY_STREAMS = 'too many open streams for this account';

/** An authenticated connection's account. */
interface Caller {
  /**
   * The SHA-256 of the key it authenticated with, asked again at each heartbeat (revoked keys, plan
   * changes) and for each replay; the digest, not the secret, is what a connection keeps for its lifetime.
   */
  readonly keyDigest: Buffer;
  readonly accountId: string;
}

type Authorized = { ok: true; caller: Caller } | { ok: false; error: GatewayError };

/**
 * The payment stream (spec §6) at `ws(s)://{host}/v1/payments/stream`, served on the API's own port.
 *
 * Authentication, in order: `Authorization: Bearer <key>` on the upgrade request; or the subprotocol
 * pair `Sec-WebSocket-Protocol: bearer, <key>` for clients that cannot set headers (the server answers
 * with `bearer`, never echoing the key); or, with neither, a first message `{"type":"auth","apiKey":…}`
 * within 5 s. Credentials on the upgrade are checked before it is accepted (401/403/429 with the usual
 * error body); an `auth` message is answered by a close code (stream-close-codes.ts) when refused.
 * The attempt counts against the account's rate limit like one request.
 */
export function installPaymentStream(app: FastifyInstance, deps: PaymentStreamDeps): void {
  const wss = new WebSocketServer({
    noServer: true,
    // ws refuses a bigger message itself, with close code 1009 (STREAM_CLOSE.MESSAGE_TOO_BIG).
    maxPayload: MAX_STREAM_MESSAGE_BYTES,
    handleProtocols: (protocols) => (protocols.has('bearer') ? 'bearer' : false),
  });
  const alive = new WeakSet<WebSocket>();
  /** The key of each authenticated connection, asked again at each heartbeat. */
  const callers = new WeakMap<WebSocket, Caller>();
  const rechecking = new WeakSet<WebSocket>();
  /** Open authenticated connections per account on this instance. */
  const openPerAccount = new Map<string, number>();
  const maxWaiting = deps.maxUnauthenticated ?? DEFAULT_MAX_UNAUTHENTICATED;
  const maxWaitingPerAddress = Math.max(1, Math.floor(maxWaiting / 10));
  /** Connections accepted without credentials, still waiting for their `auth` message, per client address. */
  const waitingPerAddress = new Map<string, number>();
  let waiting = 0;

  app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    handleUpgrade(request, socket, head).catch((error) => {
      app.log.error({ err: error }, 'payment stream upgrade failed');
      refuse(socket, new GatewayError('INTERNAL_ERROR'));
    });
  });

  async function handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // Node's HTTP server stops listening for errors on a socket it hands to 'upgrade': a client that
    // resets it while the key is looked up would otherwise throw from the socket and end the process.
    socket.on('error', (error) => app.log.debug({ err: error }, 'payment stream socket error'));
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname.replace(/\/$/, '') !== STREAM_PATH) {
      // Another part of the app may serve WebSockets on its own path; only the last word is ours.
      if (app.server.listenerCount('upgrade') > 1) return;
      return refuse(socket, new GatewayError('NOT_FOUND', { message: `No WebSocket at ${url.pathname}.` }));
    }
    // Checked before the key, so a handshake ws would refuse (with a text/html answer of its own) gets the
    // usual error body, and does not count against the rate limit.
    const malformed = handshakeProblem(request);
    if (malformed !== undefined) return refuse(socket, malformed);
    const since = url.searchParams.get('since') ?? undefined;
    if (since !== undefined && !isEventId(since)) {
      return refuse(socket, invalidSince());
    }
    const key = presentedKey(request);
    let caller: Caller | undefined;
    let sinceSeq: number | undefined;
    const address = request.socket.remoteAddress ?? '';
    if (key === undefined) {
      if (waiting >= maxWaiting || (waitingPerAddress.get(address) ?? 0) >= maxWaitingPerAddress) {
        return refuse(
          socket,
          new GatewayError('RATE_LIMIT_EXCEEDED', {
            message:
              'Too many payment stream connections are waiting to authenticate; send the key on the upgrade, or retry shortly.',
            retryAfter: 1,
          }),
        );
      }
    } else {
      const authorized = await authorize(key);
      if (!authorized.ok) return refuse(socket, authorized.error);
      caller = authorized.caller;
      if (atConnectionCap(caller.accountId)) return refuse(socket, tooManyStreams());
      if (since !== undefined) {
        sinceSeq = await deps.hub.store.events.seqOf(caller.accountId, since);
        if (sinceSeq === undefined) return refuse(socket, invalidSince());
      }
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      // ws reports a client's protocol error (a message over maxPayload, a bad frame) here, after it has
      // sent the close frame itself (1009, 1002…) and before it closes; without a listener the error
      // would be thrown and end the process — any client could stop the gateway with one big message.
      ws.on('error', (error) =>
        app.log.info({ err: error }, 'payment stream connection closed on a protocol error'),
      );
      alive.add(ws);
      ws.on('pong', () => alive.add(ws));
      if (caller === undefined) holdWaiting(ws, address);
      serve(ws, caller, sinceSeq, since);
    });
  }

  /**
   * Messages are handled one after another, in arrival order, so a `subscribe` sent right behind the
   * `auth` message waits for the authentication instead of being lost or overtaking it.
   */
  function serve(
    ws: WebSocket,
    authorizedCaller: Caller | undefined,
    sinceSeq: number | undefined,
    since: string | undefined,
  ): void {
    let connection: StreamConnection | undefined;
    let caller = authorizedCaller;
    if (caller !== undefined) {
      callers.set(ws, caller);
      connection = start(ws, caller.accountId, sinceSeq);
    }
    const timer =
      caller === undefined
        ? setTimeout(
            () => ws.close(STREAM_CLOSE.UNAUTHORIZED, 'no auth message in time'),
            deps.authTimeoutMs ?? DEFAULT_AUTH_TIMEOUT_MS,
          )
        : undefined;
    ws.once('close', () => clearTimeout(timer));
    let queue = Promise.resolve();
    // Messages waiting for their turn. A client may send faster than they are handled (a subscribe with
    // `since` waits for the database): past MAX_PENDING_MESSAGES the connection stops reading, so the
    // rest waits in the client's TCP buffers rather than in this process's memory.
    let pending = 0;
    ws.on('message', (data) => {
      if (++pending >= MAX_PENDING_MESSAGES) ws.pause();
      queue = queue
        .then(() => handle(data))
        .then(() => {
          if (--pending < MAX_PENDING_MESSAGES && ws.isPaused) ws.resume();
        });
    });

    async function handle(data: RawData): Promise<void> {
      if (ws.readyState !== ws.OPEN) return;
      try {
        if (connection !== undefined && caller !== undefined) {
          await onMessage(connection, caller, data);
          return;
        }
        clearTimeout(timer);
        const authorized = await authenticateMessage(ws, data);
        waitingRelease.get(ws)?.();
        if (authorized === undefined) return;
        caller = authorized;
        callers.set(ws, caller);
        const seq =
          since === undefined ? undefined : await deps.hub.store.events.seqOf(caller.accountId, since);
        if (since !== undefined && seq === undefined) sendError(ws, invalidSince());
        connection = start(ws, caller.accountId, seq);
      } catch (error) {
        app.log.warn({ err: error }, 'payment stream message failed');
        if (connection === undefined) ws.close(STREAM_CLOSE.UNAVAILABLE, 'authentication unavailable; retry');
        else connection.reply(errorMessage(new GatewayError('SERVICE_UNAVAILABLE', { retryAfter: 1 })));
      }
    }
  }

  /** The account of a valid first `auth` message; otherwise closes the connection with the code that says why. */
  async function authenticateMessage(ws: WebSocket, data: RawData): Promise<Caller | undefined> {
    const message = parseMessage(data);
    if (message?.type !== 'auth' || typeof message.apiKey !== 'string') {
      ws.close(STREAM_CLOSE.UNAUTHORIZED, 'the first message must be {"type":"auth","apiKey":…}');
      return undefined;
    }
    const authorized = await authorize(message.apiKey);
    if (!authorized.ok) {
      ws.close(closeCodeOf(authorized.error), authorized.error.message.slice(0, 120));
      return undefined;
    }
    if (atConnectionCap(authorized.caller.accountId)) {
      ws.close(STREAM_CLOSE.RATE_LIMITED, TOO_MANY_STREAMS);
      return undefined;
    }
    return authorized.caller;
  }

  /** Counts a connection as waiting for its `auth` message until it authenticates or closes. */
  function holdWaiting(ws: WebSocket, address: string): void {
    waiting += 1;
    waitingPerAddress.set(address, (waitingPerAddress.get(address) ?? 0) + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      waiting -= 1;
      const left = (waitingPerAddress.get(address) ?? 1) - 1;
      if (left > 0) waitingPerAddress.set(address, left);
      else waitingPerAddress.delete(address);
    };
    ws.once('close', release);
    waitingRelease.set(ws, release);
  }
  const waitingRelease = new WeakMap<WebSocket, () => void>();

  function atConnectionCap(accountId: string): boolean {
    return (openPerAccount.get(accountId) ?? 0) >= deps.maxConnectionsPerAccount;
  }

  function tooManyStreams(): GatewayError {
    return new GatewayError('RATE_LIMIT_EXCEEDED', {
      message: `At most ${deps.maxConnectionsPerAccount} payment streams of one account may be open at once (STREAM_MAX_CONNECTIONS_PER_ACCOUNT); close one first.`,
    });
  }

  function start(
    ws: WebSocket,
    accountId: string,
    sinceSeq: number | undefined,
  ): StreamConnection | undefined {
    // Checked again here, where the connection is counted: two upgrades of one account may both have
    // passed the check before the key was looked up.
    if (atConnectionCap(accountId)) {
      ws.close(STREAM_CLOSE.RATE_LIMITED, TOO_MANY_STREAMS);
      return undefined;
    }
    openPerAccount.set(accountId, (openPerAccount.get(accountId) ?? 0) + 1);
    ws.once('close', () => {
      const left = (openPerAccount.get(accountId) ?? 1) - 1;
      if (left > 0) openPerAccount.set(accountId, left);
      else openPerAccount.delete(accountId);
    });
    const connection = new StreamConnection(
      ws,
      accountId,
      deps.hub,
      deps.maxBufferedBytes,
      (message, error) => app.log.warn({ err: error }, message),
    );
    ws.send(JSON.stringify({ type: 'authenticated', accountId }));
    if (sinceSeq !== undefined) connection.subscribe({ wallets: undefined, types: undefined }, sinceSeq);
    return connection;
  }

  async function onMessage(connection: StreamConnection, caller: Caller, data: RawData) {
    const message = parseMessage(data);
    if (message === undefined) {
      return connection.reply(errorMessage(invalidParameters({ message: 'must be a JSON object' })));
    }
    switch (message.type) {
      case 'ping':
        return connection.reply({ type: 'pong' });
      case 'auth':
        return connection.reply(
          errorMessage(invalidParameters({ type: 'this connection is already authenticated' })),
        );
      case 'subscribe': {
        const parsed = parseSubscribe(message);
        if (!parsed.ok) return connection.reply(errorMessage(invalidParameters(parsed.details)));
        const { filter, since } = parsed.value;
        if (since !== undefined) {
          // A replay reads the outbox like a history request, so it counts as one against the rate
          // limit; a subscribe that only changes the filter reads nothing and does not.
          const access = await decide({ kind: 'key-digest', digest: caller.keyDigest }, true);
          if (!access.ok) return connection.reply(errorMessage(access.error));
        }
        const sinceSeq =
          since === undefined ? undefined : await deps.hub.store.events.seqOf(caller.accountId, since);
        if (since !== undefined && sinceSeq === undefined)
          return connection.reply(errorMessage(invalidSince()));
        connection.reply({
          type: 'subscribed',
          wallets: filter.wallets === undefined ? null : [...filter.wallets],
          types: filter.types === undefined ? null : [...filter.types],
          since: since ?? null,
        });
        connection.subscribe(filter, sinceSeq);
        return;
      }
      default:
        return connection.reply(errorMessage(invalidParameters({ type: 'must be subscribe, auth or ping' })));
    }
  }

  /** The access policy's answer for the `stream` feature; storage or Redis unavailable: 503. */
  async function decide(credentials: Credentials, count: boolean): Promise<Access> {
    try {
      return await deps.policy.decide(credentials, 'stream', { count });
    } catch (error) {
      const unavailable =
        error instanceof GatewayError
          ? error
          : new GatewayError('SERVICE_UNAVAILABLE', { retryAfter: 1, cause: error });
      return { ok: false, error: unavailable, rate: undefined, plan: undefined };
    }
  }

  /** An upgrade's or `auth` message's key, decided and counted like one HTTP request to a `stream` route. */
  async function authorize(key: string): Promise<Authorized> {
    const access = await decide({ kind: 'key', key }, true);
    if (!access.ok) return { ok: false, error: access.error };
    const keyDigest = Buffer.from(access.key?.hash ?? '', 'hex');
    return { ok: true, caller: { keyDigest, accountId: access.account.id } };
  }

  // Heartbeat: a connection that did not answer the previous ping is gone (half-open TCP); drop it.
  const heartbeat = setInterval(() => {
    // One look-up per key and heartbeat, however many connections use it.
    const asked = new Map<string, Promise<Access>>();
    for (const ws of wss.clients) {
      if (!alive.has(ws)) {
        ws.terminate();
        continue;
      }
      alive.delete(ws);
      ws.ping();
      recheck(ws, asked);
    }
  }, deps.heartbeatMs);

  /**
   * Asks again for the key of an open connection: one whose key was revoked, or whose plan no longer
   * includes the stream, is closed (4001, 4003) instead of receiving the account's payments for as long
   * as it stays connected. Storage unavailable: the connection stays, and the next heartbeat asks again.
   */
  function recheck(ws: WebSocket, asked: Map<string, Promise<Access>>): void {
    const caller = callers.get(ws);
    if (caller === undefined || rechecking.has(ws)) return;
    rechecking.add(ws);
    const id = caller.keyDigest.toString('hex');
    let answer = asked.get(id);
    if (answer === undefined) {
      // Not counted: a heartbeat is the gateway's question, not the client's request.
      answer = deps.policy.decide({ kind: 'key-digest', digest: caller.keyDigest }, 'stream', {
        count: false,
      });
      asked.set(id, answer);
    }
    answer
      .then((access) => {
        if (ws.readyState !== ws.OPEN || access.ok) return;
        if (access.error.code === 'UNAUTHORIZED')
          return shut(ws, STREAM_CLOSE.UNAUTHORIZED, 'API key revoked');
        if (access.error.code === 'FORBIDDEN') {
          shut(ws, STREAM_CLOSE.FORBIDDEN, `the ${access.plan} plan does not include stream`);
        }
      })
      .catch((error) => app.log.debug({ err: error }, 'payment stream key check failed'))
      .finally(() => rechecking.delete(ws));
  }

  function shut(ws: WebSocket, code: number, reason: string): void {
    ws.close(code, reason);
    // A client that does not read cannot receive the close frame either: do not wait for it forever.
    setTimeout(() => ws.terminate(), 1_000).unref();
  }
  heartbeat.unref();

  app.addHook('preClose', async () => {
    clearInterval(heartbeat);
    for (const ws of wss.clients) ws.close(STREAM_CLOSE.GOING_AWAY, 'server shutting down');
    await new Promise<void>((resolve) => {
      const deadline = setTimeout(() => {
        for (const ws of wss.clients) ws.terminate();
        resolve();
      }, 1_000);
      const check = setInterval(() => {
        if (wss.clients.size === 0) {
          clearTimeout(deadline);
          clearInterval(check);
          resolve();
        }
      }, 10);
    });
    wss.close();
  });
}

function presentedKey(request: IncomingMessage): string | undefined {
  const header = BEARER.exec(request.headers.authorization ?? '')?.[1];
  if (header !== undefined) return header;
  const protocols = (request.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  const at = protocols.indexOf('bearer');
  return at >= 0 ? protocols[at + 1] : undefined;
}

const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;
/** An RFC 7230 token: what each subprotocol name must be. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** What ws checks of an upgrade request before accepting it, answered as INVALID_PARAMETERS naming the header. */
function handshakeProblem(request: IncomingMessage): GatewayError | undefined {
  if (request.method !== 'GET') {
    return new GatewayError('NOT_FOUND', { message: `No route ${request.method} ${STREAM_PATH}.` });
  }
  const details: Record<string, string> = {};
  if (request.headers.upgrade?.toLowerCase() !== 'websocket') details.Upgrade = 'must be websocket';
  if (!WEBSOCKET_KEY.test(request.headers['sec-websocket-key'] ?? '')) {
    details['Sec-WebSocket-Key'] = 'must be 16 bytes in base64';
  }
  const version = Number(request.headers['sec-websocket-version']);
  if (version !== 13 && version !== 8) details['Sec-WebSocket-Version'] = 'must be 13';
  const protocols = request.headers['sec-websocket-protocol'];
  if (protocols !== undefined) {
    const names = protocols.split(',').map((name) => name.trim());
    if (!names.every((name) => TOKEN.test(name)) || new Set(names).size !== names.length) {
      details['Sec-WebSocket-Protocol'] = 'must be distinct comma-separated tokens, as in "bearer, <key>"';
    }
  }
  if (Object.keys(details).length === 0) return undefined;
  return invalidParameters(details, 'The WebSocket handshake is malformed.');
}

function invalidSince(): GatewayError {
  return invalidParameters({ since: 'must be the id of one of your events (evt_…)' });
}

function closeCodeOf(error: GatewayError): number {
  switch (error.code) {
    case 'FORBIDDEN':
      return STREAM_CLOSE.FORBIDDEN;
    case 'RATE_LIMIT_EXCEEDED':
      return STREAM_CLOSE.RATE_LIMITED;
    case 'UNAUTHORIZED':
      return STREAM_CLOSE.UNAUTHORIZED;
    default:
      return STREAM_CLOSE.UNAVAILABLE;
  }
}

function parseMessage(data: RawData): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(data.toString());
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function errorMessage(error: GatewayError): Record<string, unknown> {
  return { type: 'error', ...toErrorBody(error) };
}

function sendError(ws: WebSocket, error: GatewayError): void {
  if (ws.readyState !== ws.OPEN) return;
  ws.send(JSON.stringify(errorMessage(error)));
}

/** Refuses an upgrade with an HTTP answer carrying the usual error body (spec §7). */
function refuse(socket: Duplex, error: GatewayError): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(toErrorBody(error));
  const reason = STATUS_TEXT[error.status] ?? 'Error';
  const headers = [
    `HTTP/1.1 ${error.status} ${reason}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  if (error.status === 401) headers.push('WWW-Authenticate: Bearer realm="gate402"');
  if (error.retryAfter !== undefined) headers.push(`Retry-After: ${error.retryAfter}`);
  socket.end(`${headers.join('\r\n')}\r\n\r\n${body}`);
  // The server's half of the connection is closed; a client that never closes its own would otherwise
  // hold the socket (and the server's shutdown) until the keep-alive timeout.
  setTimeout(() => socket.destroy(), 1_000).unref();
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};
