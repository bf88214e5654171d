import { Counter, collectDefaultMetrics, Gauge, Histogram, type LabelValues, Registry } from 'prom-client';
import type { RpcObserver, RpcOutcome } from '../chains/rpc-endpoints.ts';
import { toWholeUnits } from '../domain/money.ts';
import type { NetworkInfo } from '../domain/network.ts';
import type { SponsoredFeeObserver } from '../services/facilitator/facilitator-service.ts';
import type { Store } from '../store/store.ts';
import type { FinalityObserver } from '../workers/finality-watch.ts';

/** Latency buckets in seconds: HTTP answers and RPC calls, from sub-millisecond reads to timeouts. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Time from a payment's creation to `confirmed`: a Solana slot to minutes on a congested EVM chain. */
const CONFIRMATION_BUCKETS = [0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300];

/** Where the numbers read at scrape time come from. */
export interface MetricsSources {
  readonly store?: Pick<Store, 'payments' | 'events'>;
}

type HttpLabels = 'method' | 'route' | 'status';

/**
 * Every Prometheus series gate402 exports, in a registry of its own (so several gateways in one
 * process, as in tests, never share counts). The per-request cost is one map lookup and one
 * histogram observation; gauges that need storage are read only when /metrics is scraped.
 */
export class GatewayMetrics implements RpcObserver, SponsoredFeeObserver, FinalityObserver {
  readonly registry = new Registry();
  private readonly httpDuration: Histogram<HttpLabels>;
  /** Histogram children by "method route status", so a request never builds a label object. */
  private readonly httpChildren = new Map<string, { observe(value: number): void }>();
  private readonly rpcCalls: Counter<'network' | 'method' | 'outcome'>;
  private readonly rpcDuration: Histogram<'network'>;
  private readonly confirmation: Histogram<'network'>;
  private readonly webhookDeliveries: Counter<'result'>;
  private readonly rateLimited: Counter<'plan'>;
  private readonly sponsoredFees: Counter<'account' | 'network'>;
  private readonly sponsoredSettlements: Counter<'account' | 'network'>;
  private readonly reorgs: Counter<'network' | 'outcome'>;
  private store: MetricsSources['store'];

  constructor(sources: MetricsSources = {}) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.httpDuration = new Histogram({
      name: 'gate402_http_request_duration_seconds',
      help: 'HTTP requests by route pattern, method and status: latency (the _count series counts requests).',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.rpcCalls = new Counter({
      name: 'gate402_rpc_calls_total',
      help: 'Chain RPC calls per network and JSON-RPC method; outcome ok, error (a JSON-RPC error answer) or unavailable (down, timed out, HTTP error).',
      labelNames: ['network', 'method', 'outcome'],
      registers,
    });
    this.rpcDuration = new Histogram({
      name: 'gate402_rpc_call_duration_seconds',
      help: 'Chain RPC call latency per network, every outcome.',
      labelNames: ['network'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.confirmation = new Histogram({
      name: 'gate402_payment_confirmation_seconds',
      help: 'Time from a payment being recorded to this instance seeing it confirmed, per network.',
      labelNames: ['network'],
      buckets: CONFIRMATION_BUCKETS,
      registers,
    });
    this.webhookDeliveries = new Counter({
      name: 'gate402_webhook_deliveries_total',
      help: 'Webhook delivery attempts by result: succeeded, retrying (failed, will be retried), failed (given up).',
      labelNames: ['result'],
      registers,
    });
    this.rateLimited = new Counter({
      name: 'gate402_rate_limit_rejections_total',
      help: 'Requests refused with 429 RATE_LIMIT_EXCEEDED, per plan.',
      labelNames: ['plan'],
      registers,
    });
    this.sponsoredFees = new Counter({
      name: 'gate402_x402_sponsored_fees_total',
      help: "Network fees the built-in x402 facilitator's fee payer paid for an account's settlements, in whole units of the network's native currency (SOL, ETH), per account and network; the worst case where the fee paid is unknown.",
      labelNames: ['account', 'network'],
      registers,
    });
    this.sponsoredSettlements = new Counter({
      name: 'gate402_x402_sponsored_settlements_total',
      help: 'Settlements whose network fee the built-in x402 facilitator paid (settled or failed), per account and network.',
      labelNames: ['account', 'network'],
      registers,
    });
    this.reorgs = new Counter({
      name: 'gate402_payment_reorgs_total',
      help: 'Confirmed payments whose transaction left the chain, per network and outcome: reorged (found gone: then resent or reverted), resent (its stored signed bytes broadcast again), reverted (moved to reverted). Each payment is counted once per outcome and instance.',
      labelNames: ['network', 'outcome'],
      registers,
    });
    if (sources.store !== undefined) this.watchStorage(sources.store);
  }

  /** Whether watchStorage was called (a registry is told of its storage once). */
  get watchingStorage(): boolean {
    return this.store !== undefined;
  }

  /** Adds the payments gauge, read from `store` at each scrape (and lets watchOutbox read the outbox). */
  watchStorage(store: Pick<Store, 'payments' | 'events'>): void {
    this.store = store;
    new Gauge({
      name: 'gate402_payments',
      help: 'Payments in storage by status and network (all instances share storage, so all report the same).',
      labelNames: ['status', 'network'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const row of await store.payments.countByStatus()) {
          this.set({ status: row.status, network: row.network }, row.count);
        }
      },
    });
  }

  /**
   * Adds the outbox lag: events committed that this instance has not yet dispatched to its stream
   * subscribers and webhook fan-out (`dispatchedSeq` is the highest seq it has).
   */
  watchOutbox(dispatchedSeq: () => number): void {
    const { store } = this;
    if (store === undefined) throw new Error('watchStorage first: the outbox lag is read from storage');
    new Gauge({
      name: 'gate402_outbox_lag_events',
      help: 'Events committed to the outbox that this instance has not yet dispatched to its stream subscribers and webhook fan-out.',
      registers: [this.registry],
      async collect() {
        this.set(Math.max(0, (await store.events.lastSeq()) - dispatchedSeq()));
      },
    });
  }

  /** Called from onResponse for every request; `route` is the route pattern, never the raw URL. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${status}`;
    let child = this.httpChildren.get(key);
    if (child === undefined) {
      const labels: LabelValues<HttpLabels> = { method, route, status: String(status) };
      child = this.httpDuration.labels(labels);
      this.httpChildren.set(key, child);
    }
    child.observe(seconds);
  }

  onCall(network: string, method: string, outcome: RpcOutcome, seconds: number): void {
    this.rpcCalls.inc({ network, method, outcome });
    this.rpcDuration.observe({ network }, seconds);
  }

  paymentConfirmed(network: string, seconds: number): void {
    this.confirmation.observe({ network }, Math.max(0, seconds));
  }

  paymentReorged(network: string): void {
    this.reorgs.inc({ network, outcome: 'reorged' });
  }

  paymentResent(network: string): void {
    this.reorgs.inc({ network, outcome: 'resent' });
  }

  paymentReverted(network: string): void {
    this.reorgs.inc({ network, outcome: 'reverted' });
  }

  webhookAttempted(result: 'succeeded' | 'retrying' | 'failed'): void {
    this.webhookDeliveries.inc({ result });
  }

  rateLimitRejected(plan: string): void {
    this.rateLimited.inc({ plan });
  }

  feeSponsored(accountId: string, network: NetworkInfo, fee: bigint): void {
    const labels = { account: accountId, network: network.id };
    this.sponsoredFees.inc(labels, toWholeUnits(fee, network.nativeCurrency.decimals));
    this.sponsoredSettlements.inc(labels);
  }

  /** The text exposition format Prometheus scrapes. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
