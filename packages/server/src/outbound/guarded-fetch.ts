import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import { type OutboundPolicy, OutboundUrlError, pinnedLookup, resolveOutbound } from './ssrf-guard.ts';

export interface GuardedFetchOptions {
  /** The most request body bytes sent; a larger body is refused before connecting. */
  readonly maxRequestBytes: number;
  /** Resolves a host (default: the system resolver); tests answer what they like. */
  readonly resolve?: Parameters<typeof resolveOutbound>[2];
}

/** Statuses whose answer has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * `fetch` for URLs a caller chose, through the SSRF guard: each request's host is resolved, every address
 * checked (ssrf-guard.ts), and the connection pinned to those addresses, so DNS cannot rebind it. Redirects
 * are never followed (a 3xx is the answer, as with `redirect: 'manual'`): whoever follows one calls this
 * again, and the next hop is checked like the first. A refused URL rejects with {@link OutboundUrlError}.
 * The answer's body is streamed, not buffered: the caller bounds how much it reads, and the request's
 * `signal` bounds the time (it aborts the connection at any point, the body included).
 */
export function guardedFetch(policy: OutboundPolicy, options: GuardedFetchOptions): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    request.signal.throwIfAborted();
    const body = request.body === null ? undefined : Buffer.from(await request.arrayBuffer());
    if (body !== undefined && body.byteLength > options.maxRequestBytes) {
      throw new OutboundUrlError(`request body must be at most ${options.maxRequestBytes} bytes`);
    }
    const resolved = await resolveOutbound(
      request.url,
      policy,
      ...(options.resolve === undefined ? [] : [options.resolve]),
    );
    request.signal.throwIfAborted();
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    if (body !== undefined) headers['content-length'] = String(body.byteLength);
    const send = resolved.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Response>((resolve, reject) => {
      const req = send(
        resolved.url,
        { method: request.method, headers, lookup: pinnedLookup(resolved), signal: request.signal },
        (res) => {
          try {
            resolve(toResponse(res, request.url));
          } catch (error) {
            res.destroy();
            reject(error);
          }
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  };
}

function toResponse(res: IncomingMessage, url: string): Response {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 599) throw new TypeError(`${url} answered with HTTP status ${status}`);
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    const name = res.rawHeaders[i] ?? '';
    const value = res.rawHeaders[i + 1] ?? '';
    try {
      headers.append(name, value);
    } catch {
      // A header Node accepted and the Fetch standard does not: left out rather than failing the answer.
    }
  }
  if (NULL_BODY.has(status)) {
    res.resume();
    return new Response(null, { status, statusText: res.statusMessage ?? '', headers });
  }
  const response = new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, {
    status,
    statusText: res.statusMessage ?? '',
    headers,
  });
  Object.defineProperty(response, 'url', { value: url });
  return response;
}
