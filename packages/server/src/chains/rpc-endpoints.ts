import { ChainError } from './chain-error.ts';

/** How one RPC call ended, as metrics count it. */
export type RpcOutcome =
  /** The endpoint answered (a JSON-RPC error in the answer is still an answer). */
  | 'ok'
  /** The endpoint answered with a refusal the caller sees (a JSON-RPC error). */
  | 'error'
  /** Down, too slow, or answering HTTP errors: the next endpoint is tried. */
  | 'unavailable';

/** Told about every attempt against an endpoint; metrics implement it. Must be cheap and never throw. */
export interface RpcObserver {
  onCall(network: string, method: string, outcome: RpcOutcome, seconds: number): void;
}

/** How calls to a network's endpoints are limited and watched (RPC_TIMEOUT_MS, RPC_DOWN_MS, metrics). */
export interface RpcLimits {
  /** How long one attempt may take before the endpoint counts as unavailable. */
  readonly timeoutMs: number;
  /** How long an endpoint that failed is skipped before it is tried again. */
  readonly downMs: number;
  readonly observer?: RpcObserver | undefined;
}

export interface RpcEndpointsOptions extends RpcLimits {
  /** Names the network in metrics and messages (a CAIP-2 id, or the family before the id is known). */
  readonly network: string;
  /** In order of preference; the first that is up is asked first. Never logged: they may hold API keys. */
  readonly urls: readonly string[];
  readonly now?: () => number;
}

/** One RPC call, as RpcEndpoints runs it against one endpoint after another. */
export interface RpcCall<T> {
  /** The JSON-RPC method, for metrics. */
  readonly method: string;
  readonly attempt: (url: string, signal: AbortSignal) => Promise<T>;
  /** A transport failure (connection refused or reset, HTTP error status): try the next endpoint. */
  readonly isUnavailable: (error: unknown) => boolean;
  /** An answer that carries a refusal (a JSON-RPC error object), counted as an error but returned. */
  readonly isRefusal?: (result: T) => boolean;
  readonly signal?: AbortSignal | undefined;
}

interface Endpoint {
  readonly url: string;
  /** Unix ms before which the endpoint is not asked; 0 when it is up. */
  downUntil: number;
}

/** Defaults for an endpoint list built without configuration (tests, the embedded chains). */
export const DEFAULT_RPC_TIMEOUT_MS = 8_000;
export const DEFAULT_RPC_DOWN_MS = 2_000;

/**
 * The RPC endpoints of one network, with a time limit per call and failover between them.
 *
 * An endpoint that is down, slower than `timeoutMs` or answering HTTP errors is skipped for `downMs`,
 * and the call moves to the next one. When every endpoint is skipped, a call fails at once with a
 * ChainError `unavailable` (so requests answer 503 promptly instead of each waiting out a timeout), and
 * once `downMs` has passed the next call tries again: recovery needs nobody. Failing over a call that
 * may have reached the first endpoint is safe because every call gate402 makes is a read or the
 * broadcast of already-signed bytes, which a chain accepts once.
 */
export class RpcEndpoints {
  readonly network: string;
  private readonly endpoints: Endpoint[];
  private readonly now: () => number;

  constructor(private readonly options: RpcEndpointsOptions) {
    if (options.urls.length === 0) throw new Error(`no RPC URL for ${options.network}`);
    this.network = options.network;
    this.endpoints = options.urls.map((url) => ({ url, downUntil: 0 }));
    this.now = options.now ?? Date.now;
  }

  /** The preferred URL: the one shown to local-mode callers. */
  get primaryUrl(): string {
    return (this.endpoints[0] as Endpoint).url;
  }

  get urls(): readonly string[] {
    return this.endpoints.map((e) => e.url);
  }

  /** How long one attempt may take (RPC_TIMEOUT_MS); clients built on these endpoints set theirs from it. */
  get timeoutMs(): number {
    return this.options.timeoutMs;
  }

  /**
   * Whether every endpoint is skipped now (each failed within the last `downMs`): a call would fail at
   * once. Waits that poll the chain end on it rather than wait out their whole time.
   */
  get allDown(): boolean {
    const at = this.now();
    return this.endpoints.every((e) => e.downUntil > at);
  }

  /** Another list for the same network, limits and observer (e.g. its PubSub URLs beside its RPC URLs). */
  withUrls(urls: readonly string[]): RpcEndpoints {
    return new RpcEndpoints({ ...this.options, urls });
  }

  /**
   * Marks an endpoint down from outside a call: a long-lived connection to it (a subscription) broke or
   * went silent after `run` had opened it, so the next `run` starts with the endpoint after it.
   */
  markDown(url: string): void {
    const endpoint = this.endpoints.find((e) => e.url === url);
    if (endpoint !== undefined) endpoint.downUntil = this.now() + this.options.downMs;
  }

  /**
   * Runs `call.attempt` against the first endpoint that is up, then the next ones while they are
   * unavailable. `isUnavailable` tells a transport failure (try elsewhere) from an answer (returned or
   * thrown as it is). The caller's `signal` ends the call without blaming the endpoint.
   */
  async run<T>(call: RpcCall<T>): Promise<T> {
    const { method, signal } = call;
    const at = this.now();
    const candidates = this.endpoints.filter((e) => e.downUntil <= at);
    if (candidates.length === 0) throw this.unavailableError(at, undefined);
    let lastFailure: unknown;
    for (const endpoint of candidates) {
      signal?.throwIfAborted();
      const started = performance.now();
      // Read again in the catch below, so `timeout` stays referenced through the await: any() holds its
      // sources only weakly, and an unreferenced timeout signal can be collected with its timer (deadline.ts).
      const timeout = AbortSignal.timeout(this.options.timeoutMs);
      const combined = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
      try {
        const result = await raceAbort(call.attempt(endpoint.url, combined), combined);
        endpoint.downUntil = 0;
        this.observe(method, call.isRefusal?.(result) === true ? 'error' : 'ok', started);
        return result;
      } catch (error) {
        if (signal?.aborted === true) throw error;
        if (!timeout.aborted && !call.isUnavailable(error)) {
          this.observe(method, 'error', started);
          throw error;
        }
        endpoint.downUntil = this.now() + this.options.downMs;
        this.observe(method, 'unavailable', started);
        lastFailure = timeout.aborted ? new Error(`no answer within ${this.options.timeoutMs} ms`) : error;
      }
    }
    throw this.unavailableError(this.now(), lastFailure);
  }

  private unavailableError(at: number, cause: unknown): ChainError {
    const next = Math.min(...this.endpoints.map((e) => e.downUntil));
    const retryAfterSeconds = Math.max(1, Math.ceil((next - at) / 1_000));
    const count = this.endpoints.length;
    // The URLs stay out of the message: they may carry API keys.
    return new ChainError(
      'unavailable',
      count === 1
        ? `the RPC endpoint of ${this.network} did not answer`
        : `none of the ${count} RPC endpoints of ${this.network} answered`,
      { cause, retryAfterSeconds },
    );
  }

  private observe(method: string, outcome: RpcOutcome, started: number): void {
    this.options.observer?.onCall(this.network, method, outcome, (performance.now() - started) / 1_000);
  }
}

/**
 * Settles with `work`, or rejects as soon as `signal` aborts even when `work` ignores the signal (a
 * client library with its own timer), so no call outlives its time limit.
 */
export function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
