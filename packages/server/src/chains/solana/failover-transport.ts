import {
  createDefaultRpcTransport,
  isSolanaError,
  type RpcTransport,
  SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR,
} from '@solana/kit';
import type { RpcEndpoints } from '../rpc-endpoints.ts';

/**
 * A @solana/kit RPC transport over every endpoint of the network: each request is sent to the first
 * endpoint that is up, within the per-call time limit, and to the next on a transport failure (see
 * RpcEndpoints). JSON-RPC errors in an answer are answers: kit turns them into errors as usual.
 */
export function failoverTransport(endpoints: RpcEndpoints): RpcTransport {
  const transports = new Map(endpoints.urls.map((url) => [url, createDefaultRpcTransport({ url })]));
  return (<TResponse>(config: { payload: unknown; signal?: AbortSignal }) =>
    endpoints.run({
      method: methodOf(config.payload),
      attempt: (url, signal) => (transports.get(url) as RpcTransport)<TResponse>({ ...config, signal }),
      isUnavailable: isTransportFailure,
      isRefusal: (response) => typeof response === 'object' && response !== null && 'error' in response,
      signal: config.signal,
    })) as RpcTransport;
}

function methodOf(payload: unknown): string {
  const method = (payload as { method?: unknown } | null)?.method;
  return typeof method === 'string' ? method : 'batch';
}

/** An HTTP error status (5xx, 429, …), or no HTTP answer at all (refused, reset, DNS). */
function isTransportFailure(error: unknown): boolean {
  if (isSolanaError(error, SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR)) return true;
  if (isSolanaError(error)) return false;
  // fetch rejects with a TypeError ("fetch failed") for connection failures, and a body that is not
  // JSON (a proxy's error page) is a SyntaxError.
  return error instanceof TypeError || error instanceof SyntaxError;
}
