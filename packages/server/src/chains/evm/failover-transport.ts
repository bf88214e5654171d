import {
  BaseError,
  custom,
  type EIP1193RequestFn,
  HttpRequestError,
  http,
  RpcRequestError,
  TimeoutError,
  type Transport,
} from 'viem';
import { withSpan } from '../../telemetry/tracing.ts';
import type { RpcEndpoints } from '../rpc-endpoints.ts';

/**
 * A viem transport over every endpoint of the network: each request goes to the first endpoint that is
 * up, within the per-call time limit, and to the next on a transport failure (see RpcEndpoints). viem's
 * own retries are off: failing over is the retry, and a request never waits out more than its limit.
 */
export function failoverTransport(endpoints: RpcEndpoints, timeoutMs: number): Transport {
  const requests = new Map(
    endpoints.urls.map((url) => [
      url,
      // A little over the pool's limit, so the pool's timer decides and viem's never fires first.
      http(url, { retryCount: 0, timeout: timeoutMs + 1_000 })({ retryCount: 0 }).request,
    ]),
  );
  // One span per call when tracing is on, failovers included; no URL in it (a provider's may hold a key).
  const request = (async ({ method, params }: { method: string; params?: unknown }) =>
    withSpan(
      `rpc ${method}`,
      'client',
      { 'rpc.system': 'jsonrpc', 'rpc.method': method, 'gate402.chain.family': 'evm' },
      () =>
        endpoints.run({
          method,
          attempt: (url) => (requests.get(url) as EIP1193RequestFn)({ method, params } as never),
          isUnavailable: isTransportFailure,
        }),
    )) as EIP1193RequestFn;
  return custom({ request }, { retryCount: 0 });
}

/** No JSON-RPC answer came back: refused, reset, timed out, or an HTTP error status (5xx, 429, …). */
function isTransportFailure(error: unknown): boolean {
  if (!(error instanceof BaseError)) return error instanceof TypeError;
  const transport = error.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError);
  return transport !== null && error.walk((e) => e instanceof RpcRequestError) === null;
}
