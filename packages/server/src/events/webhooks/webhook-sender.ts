import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import {
  type OutboundPolicy,
  OutboundUrlError,
  pinnedLookup,
  resolveOutbound,
} from '../../outbound/ssrf-guard.ts';

/** What one POST to an endpoint came to: a status code, or why there was none. */
export type SendOutcome =
  | {
      readonly ok: boolean;
      readonly statusCode: number;
      readonly error: null;
      /** The answer's Retry-After header, as sent. */
      readonly retryAfter?: string;
    }
  | { readonly ok: false; readonly statusCode: null; readonly error: string };

/**
 * The whole of one attempt, from resolving the endpoint's host to its answer's status. The delivery
 * lease (webhook-worker.ts) is sized from it: a lease must outlast every attempt made under it.
 */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** The endpoint's answer is not used; at most this much of it is read before the connection closes. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface PostOptions {
  /** Default ATTEMPT_TIMEOUT_MS; tests shorten it. */
  readonly timeoutMs?: number;
  /** Resolves the host (default: the system resolver); tests answer slowly. */
  readonly resolve?: Parameters<typeof resolveOutbound>[2];
}

/**
 * POSTs a signed payload to a webhook URL through the SSRF guard: the host is resolved, every address
 * checked, and the connection pinned to them. No redirects are followed (a 3xx is a failed attempt),
 * so an endpoint cannot bounce the request somewhere the guard did not look. Size-limited, and over
 * within `timeoutMs` in all, name resolution included: nothing is sent after that.
 */
export async function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  policy: OutboundPolicy,
  options: PostOptions = {},
): Promise<SendOutcome> {
  const timeoutMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
  const timedOut = `no answer within ${timeoutMs / 1000} s`;
  const endsAt = Date.now() + timeoutMs;
  let resolved: Awaited<ReturnType<typeof resolveOutbound>>;
  let resolving: NodeJS.Timeout | undefined;
  try {
    // The system resolver cannot be cancelled (and may wait on unreachable name servers for longer
    // than the attempt may last): it is left to finish on its own, and its answer is not used.
    resolved = await Promise.race([
      resolveOutbound(url, policy, ...(options.resolve === undefined ? [] : [options.resolve])),
      new Promise<never>((_, reject) => {
        resolving = setTimeout(() => reject(new AttemptTimeout(timedOut)), timeoutMs);
      }),
    ]);
  } catch (error) {
    return {
      ok: false,
      statusCode: null,
      error: error instanceof OutboundUrlError || error instanceof AttemptTimeout ? error.message : 'refused',
    };
  } finally {
    clearTimeout(resolving);
  }
  const send = resolved.url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    // The whole attempt is bounded, not only the silence between two packets: an endpoint that sends
    // its answer a byte at a time would otherwise hold the attempt (and the worker's round) forever.
    const deadline = setTimeout(() => req.destroy(new Error(timedOut)), Math.max(0, endsAt - Date.now()));
    const req = send(
      resolved.url,
      {
        method: 'POST',
        lookup: pinnedLookup(resolved),
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': 'gate402-webhooks',
        },
      },
      (res) => {
        // The status is the answer. The body is not used: it is read (at most MAX_RESPONSE_BYTES, until
        // the deadline) only to end the exchange.
        const statusCode = res.statusCode ?? 0;
        const retryAfter = res.headers['retry-after'];
        resolve({
          ok: statusCode >= 200 && statusCode < 300,
          statusCode,
          error: null,
          ...(retryAfter === undefined ? {} : { retryAfter }),
        });
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_RESPONSE_BYTES) res.destroy();
        });
        res.on('error', () => {});
      },
    );
    req.on('error', (error) => resolve({ ok: false, statusCode: null, error: error.message.slice(0, 200) }));
    req.on('close', () => clearTimeout(deadline));
    req.end(body);
  });
}

class AttemptTimeout extends Error {}
