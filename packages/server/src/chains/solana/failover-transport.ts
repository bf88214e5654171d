import { isSolanaError, type RpcTransport } from '@solana/kit';
import { withSpan } from '../../telemetry/tracing.ts';
import type { RpcEndpoints } from '../rpc-endpoints.ts';
import { createNodeHttpTransport, RpcTransportError } from './node-http-transport.ts';

/**
 * A @solana/kit RPC transport over every endpoint of the network: each request is sent to the first
 * endpoint that is up, within the per-call time limit, and to the next on a transport failure (see
 * RpcEndpoints). JSON-RPC errors in an answer are answers: kit turns them into errors as usual.
 */
export function failoverTransport(endpoints: RpcEndpoints): RpcTransport {
  const transports = new Map(endpoints.urls.map((url) => [url, createNodeHttpTransport({ url })]));
  return (<TResponse>(config: { payload: unknown; signal?: AbortSignal }) => {
    const method = methodOf(config.payload);
    // One span per call when tracing is on, failovers included; no URL in it (a provider's may hold a key).
    return withSpan(
      `rpc ${method}`,
      'client',
      { 'rpc.system': 'jsonrpc', 'rpc.method': method, 'gate402.chain.family': 'solana' },
      () =>
        endpoints.run({
          method,
          attempt: (url, signal) => (transports.get(url) as RpcTransport)<TResponse>({ ...config, signal }),
          isUnavailable: isTransportFailure,
          isRefusal: (response) => typeof response === 'object' && response !== null && 'error' in response,
          signal: config.signal,
        }),
    );
  }) as RpcTransport;
}

function methodOf(payload: unknown): string {
  const method = (payload as { method?: unknown } | null)?.method;
  return typeof method === 'string' ? method : 'batch';
}

/**
 * An HTTP error status (5xx, 429, …), no HTTP answer at all (refused, reset, DNS), or a body that is
 * not JSON (a proxy's error page). An answer over the size bound is not: every endpoint would send the
 * same answer to the same question, and marking them all down would turn one caller's oversized query
 * into 503s for every caller for RPC_DOWN_MS; that call alone fails.
 */
export function isTransportFailure(error: unknown): boolean {
  if (error instanceof RpcTransportError) return error.kind !== 'too_large';
  if (isSolanaError(error)) return false;
  // An invalid URL is a TypeError, as it was with fetch.
  return error instanceof TypeError || error instanceof SyntaxError;
}
