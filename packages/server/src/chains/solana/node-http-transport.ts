import {
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type RequestOptions,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { urlToHttpOptions } from 'node:url';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import {
  isJsonRpcPayload,
  type RpcTransport,
  SOLANA_ERROR__MALFORMED_BIGINT_STRING,
  SolanaError,
} from '@solana/kit';

/** Why a JSON-RPC call got no usable answer from one endpoint. */
export type RpcTransportFailureKind =
  /** An HTTP status outside 2xx (5xx, 429, a proxy's 502, a redirect). */
  | 'http_status'
  /** No HTTP answer: refused, reset, closed before the whole body, DNS. */
  | 'connection'
  /** An answer whose body is not JSON (a proxy's error page) or whose encoding cannot be decoded. */
  | 'malformed'
  /** An answer larger than the transport's bound; it was not read further. */
  | 'too_large';

/** Thrown (as the rejection) by the node:http transport; RpcEndpoints classifies it by `kind`. */
export class RpcTransportError extends Error {
  override readonly name = 'RpcTransportError';
  /** For `http_status`: the status the endpoint answered. */
  readonly statusCode: number | undefined;
  constructor(
    readonly kind: RpcTransportFailureKind,
    message: string,
    options?: { cause?: unknown; statusCode?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.statusCode = options?.statusCode;
  }
}

export interface NodeHttpTransportOptions {
  readonly url: string;
  /** Connections kept to the endpoint at most; further calls wait for a free one. */
  readonly maxSockets?: number;
  /** Answers larger than this (decoded) are refused with RpcTransportError `too_large`. */
  readonly maxResponseBytes?: number;
}

export const DEFAULT_MAX_SOCKETS = 64;
/**
 * 32 MiB: far above any answer gate402 asks for (a whole `getTokenAccountsByOwner` of a busy address
 * is a few MiB), low enough that one answer cannot exhaust the process's memory.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
/** An idle pooled connection is closed after this, unless the server announced a shorter keep-alive. */
const IDLE_SOCKET_MS = 30_000;

/**
 * A @solana/kit RPC transport for one JSON-RPC endpoint over `node:http`/`node:https`, with a
 * keep-alive connection pool of its own. It replaces kit's `createDefaultRpcTransport`, whose fetch
 * (undici: Request objects, web streams, an AbortSignal per call) cost more CPU than the small calls
 * gate402 makes, and serialises and parses exactly as kit's transport does: Solana methods with
 * integers as bigints, anything else as plain JSON.
 *
 * Rejections: RpcTransportError for an HTTP error status, no answer, a body that is not JSON, or an
 * answer over the bound; the signal's reason when the signal aborts (the request is destroyed at once,
 * so its connection is never reused).
 *
 * Kit's default transport also coalesces identical requests made in the same tick into one. This one
 * does not: that window is a single synchronous job, and gate402's calls come from separate requests,
 * timers and socket events, so identical ones almost never share a job (the x402 verifier shares its
 * concurrent simulations itself, across ticks), while the coalescer costs every call a stable
 * stringify of its params, an AbortController and an extra promise.
 *
 * Compression is not asked for: on the calls gate402 makes, inflating costs more CPU than the bytes
 * save. An answer compressed anyway (gzip, deflate, br) is decoded.
 *
 * @example
 * const rpc = createSolanaRpcFromTransport(createNodeHttpTransport({ url: 'http://127.0.0.1:8899' }));
 * const { value: lamports } = await rpc.getBalance(address).send();
 */
export function createNodeHttpTransport(options: NodeHttpTransportOptions): RpcTransport {
  const url = new URL(options.url);
  const secure = url.protocol === 'https:';
  if (!secure && url.protocol !== 'http:') throw new TypeError(`not an http(s) URL: ${url.protocol}`);
  const maxSockets = options.maxSockets ?? DEFAULT_MAX_SOCKETS;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const agentOptions = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets, timeout: IDLE_SOCKET_MS };
  const agent = secure ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
  const send = secure ? httpsRequest : httpRequest;
  // Parsed once: urlToHttpOptions handles IPv6 brackets and user:password in the URL.
  const target = urlToHttpOptions(url);
  const base: RequestOptions = {
    protocol: target.protocol,
    hostname: target.hostname,
    port: target.port,
    path: target.path,
    method: 'POST',
    agent,
    ...(target.auth === undefined ? {} : { auth: target.auth }),
  };

  const post = (body: string, signal: AbortSignal | undefined, retried: boolean): Promise<string> =>
    new Promise<string>((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(signal.reason);
        return;
      }
      let settled = false;
      let answered = false;
      const settle = () => {
        settled = true;
        signal?.removeEventListener('abort', onAbort);
      };
      const answer: Answer = {
        resolve: (text) => {
          if (settled) return;
          settle();
          resolve(text);
        },
        reject: (error) => {
          if (settled) return;
          settle();
          reject(error);
        },
      };
      const onAbort = () => {
        req.destroy();
        answer.reject(signal?.reason);
      };
      const req = send(
        {
          ...base,
          headers: {
            accept: 'application/json',
            'content-type': 'application/json; charset=utf-8',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          answered = true;
          readAnswer(res, maxResponseBytes, answer);
        },
      );
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (settled) return;
        // A pooled connection the server closed while it sat idle fails as soon as it is written to,
        // before any answer. Sending once more on a fresh one is safe: every call gate402 makes is a
        // read or the broadcast of already-signed bytes, which a chain accepts once.
        if (
          !retried &&
          !answered &&
          req.reusedSocket &&
          (error.code === 'ECONNRESET' || error.code === 'EPIPE')
        ) {
          settle();
          post(body, signal, true).then(resolve, reject);
          return;
        }
        answer.reject(
          new RpcTransportError('connection', `no answer from the RPC endpoint: ${error.message}`, {
            cause: error,
          }),
        );
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      req.end(body);
    });

  return (async ({ payload, signal }: { payload: unknown; signal?: AbortSignal }) => {
    const solana = isSolanaRequest(payload);
    const text = await post(
      solana ? stringifyJsonWithBigInts(payload) : JSON.stringify(payload),
      signal,
      false,
    );
    try {
      return solana ? parseJsonWithBigInts(text) : JSON.parse(text);
    } catch (error) {
      // Kit's refusal of a malformed {"$n": …} value is an answer it refuses, as with its own transport.
      if (error instanceof SolanaError) throw error;
      throw new RpcTransportError('malformed', 'the RPC endpoint answered something that is not JSON', {
        cause: error,
      });
    }
  }) as RpcTransport;
}

/** Where one request's outcome goes; only the first call of either counts. */
interface Answer {
  resolve(text: string): void;
  reject(error: unknown): void;
}

/** Reads a whole answer (text, or a RpcTransportError) within `maxBytes`. */
function readAnswer(res: IncomingMessage, maxBytes: number, answer: Answer): void {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 299) {
    // Not read: the endpoint counts as unavailable, and its connection is not worth keeping.
    res.destroy();
    answer.reject(
      new RpcTransportError(
        'http_status',
        `the RPC endpoint answered HTTP ${status} ${res.statusMessage ?? ''}`.trimEnd(),
        {
          statusCode: status,
        },
      ),
    );
    return;
  }
  const tooLarge = () => {
    res.destroy();
    answer.reject(new RpcTransportError('too_large', `the RPC answer exceeds ${maxBytes} bytes`));
  };
  const declared = Number(res.headers['content-length']);
  if (declared > maxBytes) {
    tooLarge();
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  res.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > maxBytes) tooLarge();
    else chunks.push(chunk);
  });
  res.on('end', () => {
    if (size > maxBytes) return;
    const raw = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
    let body: Buffer;
    try {
      body = decode(raw, res.headers['content-encoding'], maxBytes);
    } catch (error) {
      const kind = (error as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE' ? 'too_large' : 'malformed';
      answer.reject(
        new RpcTransportError(kind, `the RPC answer could not be decoded: ${(error as Error).message}`, {
          cause: error,
        }),
      );
      return;
    }
    const text = body.toString('utf8');
    // fetch's text() drops a byte-order mark; JSON.parse would refuse it.
    answer.resolve(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  });
  // The connection closed before the whole body: `error` (ECONNRESET "aborted") then `close`.
  res.on('error', (error) =>
    answer.reject(
      new RpcTransportError('connection', `the RPC answer was cut short: ${error.message}`, { cause: error }),
    ),
  );
  res.on('close', () => {
    if (!res.complete) answer.reject(new RpcTransportError('connection', 'the RPC answer was cut short'));
  });
}

function decode(body: Buffer, encoding: string | undefined, maxBytes: number): Buffer {
  if (encoding === undefined || encoding === 'identity' || body.length === 0) return body;
  const limit = { maxOutputLength: maxBytes };
  switch (encoding.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return gunzipSync(body, limit);
    case 'deflate':
      return inflateSync(body, limit);
    case 'br':
      return brotliDecompressSync(body, limit);
    default:
      throw new Error(`unknown content-encoding ${encoding}`);
  }
}

/**
 * The methods kit's transport (`createHttpTransportForSolanaRpc`, @solana/kit 8.4) serialises and
 * parses with bigints; any other payload is plain JSON there too.
 */
const SOLANA_RPC_METHODS = new Set([
  'getAccountInfo',
  'getAgGenesisCert',
  'getBalance',
  'getBlock',
  'getBlockCommitment',
  'getBlockHeight',
  'getBlockProduction',
  'getBlocks',
  'getBlocksWithLimit',
  'getBlockTime',
  'getClusterNodes',
  'getEpochInfo',
  'getEpochSchedule',
  'getFeeForMessage',
  'getFirstAvailableBlock',
  'getGenesisHash',
  'getHealth',
  'getHighestSnapshotSlot',
  'getIdentity',
  'getInflationGovernor',
  'getInflationRate',
  'getInflationReward',
  'getLargestAccounts',
  'getLatestBlockhash',
  'getLeaderSchedule',
  'getMaxRetransmitSlot',
  'getMaxShredInsertSlot',
  'getMinimumBalanceForRentExemption',
  'getMultipleAccounts',
  'getProgramAccounts',
  'getRecentPerformanceSamples',
  'getRecentPrioritizationFees',
  'getSignaturesForAddress',
  'getSignatureStatuses',
  'getSlot',
  'getSlotLeader',
  'getSlotLeaders',
  'getStakeMinimumDelegation',
  'getSupply',
  'getTokenAccountBalance',
  'getTokenAccountsByDelegate',
  'getTokenAccountsByOwner',
  'getTokenLargestAccounts',
  'getTokenSupply',
  'getTransaction',
  'getTransactionCount',
  'getTransactionsForAddress',
  'getVersion',
  'getVoteAccounts',
  'index',
  'isBlockhashValid',
  'minimumLedgerSlot',
  'requestAirdrop',
  'sendTransaction',
  'simulateTransaction',
]);

function isSolanaRequest(payload: unknown): boolean {
  return isJsonRpcPayload(payload) && SOLANA_RPC_METHODS.has(payload.method);
}

/**
 * Kit's `stringifyJsonWithBigInts`: bigints become bare JSON integers (as does an object
 * `{"$n":"<integer>"}`, which kit's text replacement also unwraps). The replacement only runs on text
 * that holds `"$n"`, the only text it can change.
 */
export function stringifyJsonWithBigInts(value: unknown): string {
  const text = JSON.stringify(value, wrapBigInt);
  return text.includes('"$n"') ? text.replace(WRAPPED_BIGINT, '$1') : text;
}

// Module-level rather than inline: the replacer and reviver are made once, not on every call.
const WRAPPED_BIGINT = /\{\s*"\$n"\s*:\s*"(-?\d+)"\s*\}/g;

function wrapBigInt(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? { $n: `${value}` } : value;
}

function unwrapBigIntObject(_key: string, value: unknown): unknown {
  return typeof value === 'object' && value !== null && typeof (value as { $n?: unknown }).$n === 'string'
    ? unwrapBigInt((value as { $n: string }).$n)
    : value;
}

/** A JSON number, anchored at `lastIndex`. */
const JSON_NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const FRACTIONAL = /\.|[eE]-/;

/**
 * Kit's `parseJsonWithBigInts`, with the same results: every integer outside strings (no fraction, no
 * negative exponent) becomes a bigint, and so does an object `{"$n": "<integer>"}` in the text. Kit
 * wraps integers by walking the text a character at a time into an array; this jumps from quote to
 * quote and number to number and copies the text between them in slices.
 */
export function parseJsonWithBigInts(json: string): unknown {
  return JSON.parse(wrapIntegers(json), unwrapBigIntObject);
}

function wrapIntegers(json: string): string {
  let out = '';
  let copied = 0;
  const length = json.length;
  let i = 0;
  while (i < length) {
    const c = json.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i = endOfString(json, i + 1);
      continue;
    }
    if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39) /* 0-9 */) {
      JSON_NUMBER.lastIndex = i;
      const match = JSON_NUMBER.exec(json);
      if (match === null) {
        i++;
        continue;
      }
      const number = match[0];
      const end = i + number.length;
      if (!FRACTIONAL.test(number)) {
        out += `${json.slice(copied, i)}{"$n":"${number}"}`;
        copied = end;
      }
      i = end;
      continue;
    }
    i++;
  }
  return copied === 0 ? json : out + json.slice(copied);
}

/** The index after the quote that closes a string whose text starts at `from`, or the text's length. */
function endOfString(json: string, from: number): number {
  let at = from;
  for (;;) {
    const quote = json.indexOf('"', at);
    if (quote === -1) return json.length;
    let backslashes = 0;
    while (json.charCodeAt(quote - 1 - backslashes) === 0x5c /* \ */) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    at = quote + 1;
  }
}

const BIGINT_TEXT = /^(-?)(\d+)(?:[eE]\+?(\d+))?$/;
const MAX_BIGINT_DIGITS = 1000;

function unwrapBigInt(text: string): bigint {
  const match = BIGINT_TEXT.exec(text);
  if (match !== null) {
    const [, sign, mantissa, exponent] = match as unknown as [string, string, string, string | undefined];
    const digits = mantissa.length + (exponent === undefined ? 0 : Number(exponent));
    if (digits <= MAX_BIGINT_DIGITS) {
      return exponent === undefined ? BigInt(text) : BigInt(`${sign}${mantissa}`) * 10n ** BigInt(exponent);
    }
  }
  throw new SolanaError(SOLANA_ERROR__MALFORMED_BIGINT_STRING, { value: text });
}
