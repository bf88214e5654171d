import { Webhook } from 'standardwebhooks';
import { newId } from '../../domain/ids.ts';
import type {
  DeliveryAttempt,
  EventRecord,
  WebhookDeliveryRecord,
} from '../../domain/records/event-records.ts';
import type { OutboundPolicy } from '../../outbound/ssrf-guard.ts';
import { MAX_BACKOFF_MS } from '../../scheduling/periodic-worker.ts';
import type { Store } from '../../store/store.ts';
import { type SpanAttributes, tracer, withSpan } from '../../telemetry/tracing.ts';
import type { EventHub } from '../event-hub.ts';
import { paymentEventMessage } from '../payment-event-message.ts';
import { nextAttemptAt, retryAfterMs } from './retry-schedule.ts';
import { ATTEMPT_TIMEOUT_MS, postWebhook } from './webhook-sender.ts';
import { DISABLED_PENDING_ERROR, type WebhookService } from './webhook-service.ts';

export interface WebhookWorkerOptions {
  readonly store: Store;
  readonly hub: EventHub;
  readonly webhooks: WebhookService;
  readonly policy: OutboundPolicy;
  /** Names this process in delivery leases. */
  readonly instanceId: string;
  readonly retryBaseMs: number;
  readonly retryForMs: number;
  /** The longest sleep between two looks at the delivery queue. */
  readonly pollIntervalMs: number;
  readonly now?: () => number;
  readonly log?: (message: string, error: unknown) => void;
  /** Told the result of every attempt (metrics). */
  readonly onAttempt?: (result: 'succeeded' | 'retrying' | 'failed') => void;
}

const FANOUT_PAGE = 500;
const LEASE_BATCH = 20;
/**
 * A delivery's lease, and so how long a delivery waits for another instance when the one attempting it
 * died (SIGKILL, power) mid-attempt. It must never lapse under a running attempt, or a second instance
 * would send the same delivery while the first still is. Three parts:
 * - SEND_WITHIN_MS: from taking the lease to starting the POST (reading the endpoint and the event,
 *   signing). An attempt is only started while ATTEMPT_TIMEOUT_MS + LEASE_MARGIN_MS of the lease remain;
 *   past that, the delivery is handed back unsent and leased afresh by the next round.
 * - ATTEMPT_TIMEOUT_MS: the POST itself, name resolution included, then its connection is destroyed
 *   (webhook-sender.ts), so nothing of it is sent later.
 * - LEASE_MARGIN_MS: for a timer that fires late on a busy event loop, and for instances' clocks that
 *   differ a little (a lease is judged lapsed by the clock of the instance that would take it over).
 */
const SEND_WITHIN_MS = 2_000;
const LEASE_MARGIN_MS = 3_000;
export const LEASE_MS = SEND_WITHIN_MS + ATTEMPT_TIMEOUT_MS + LEASE_MARGIN_MS;
/**
 * Rounds woken by new events begin at most this often. A round costs two commits (the fan-out's cursor,
 * the lease) and a few reads even when no endpoint wants the events; woken by every commit, at 1,000
 * payments/s that was several hundred rounds a second and a tenth of the instance's CPU. Paced, one
 * round fans out the events of many commits, and a delivery starts at most this much later.
 */
const ADVANCE_ROUND_GAP_MS = 50;
const CURSOR = 'webhooks';
const GONE = 410;

/**
 * Turns outbox events into webhook deliveries and attempts them, on every instance.
 *
 * Fan-out: in one transaction, take the `webhooks` outbox cursor (a row write, so instances take turns),
 * read the events after it, insert one delivery per matching endpoint (unique per endpoint and event),
 * move the cursor. The cursor is a commit-ordered seq (EventRepository), so no event is skipped, and a
 * crash before the commit leaves the cursor where it was: deliveries are created at least once and,
 * being unique, exactly once.
 *
 * Attempts: due deliveries are leased (one instance at a time attempts each), POSTed signed per
 * Standard Webhooks, and the outcome written under the lease. A failed attempt is retried with
 * exponential back-off (retry-schedule.ts) from the durable table, so a restart loses no retry.
 */
export class WebhookWorker {
  private timer: NodeJS.Timeout | undefined;
  /** A round put off by the pacing of wake-ups on new events (ADVANCE_ROUND_GAP_MS). */
  private paced: NodeJS.Timeout | undefined;
  private lastRoundAt = Number.NEGATIVE_INFINITY;
  private running: Promise<void> | undefined;
  private runAgain = false;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;
  /** Rounds that failed in a row (storage down): the next waits longer, as PeriodicWorker's passes do. */
  private failedRounds = 0;

  constructor(private readonly options: WebhookWorkerOptions) {}

  start(): void {
    this.stopped = false;
    this.unsubscribe = this.options.hub.onAdvance(() => this.wakeOnEvents());
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.paced !== undefined) clearTimeout(this.paced);
    await this.running;
  }

  /** New events: a round now, or once ADVANCE_ROUND_GAP_MS have passed since the last one began. */
  private wakeOnEvents(): void {
    if (this.stopped || this.paced !== undefined) return;
    const wait = this.lastRoundAt + ADVANCE_ROUND_GAP_MS - performance.now();
    if (wait <= 0) {
      this.wake();
      return;
    }
    this.paced = setTimeout(() => {
      this.paced = undefined;
      this.wake();
    }, wait);
    this.paced.unref();
  }

  /** Runs a round now, or once more after the round in progress. */
  wake(): void {
    if (this.stopped) return;
    if (this.running !== undefined) {
      this.runAgain = true;
      return;
    }
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.running = this.round().finally(() => {
      this.running = undefined;
      if (this.runAgain) {
        this.runAgain = false;
        this.wake();
      }
    });
  }

  private async round(): Promise<void> {
    this.lastRoundAt = performance.now();
    let sleep = this.options.pollIntervalMs;
    try {
      while ((await this.fanOut()) === FANOUT_PAGE) {}
      while ((await this.deliverDue()) === LEASE_BATCH) {}
      const due = await this.options.store.webhookDeliveries.nextDueAt();
      if (due !== undefined) sleep = Math.max(5, Math.min(sleep, due - this.now()));
      this.failedRounds = 0;
    } catch (error) {
      this.failedRounds += 1;
      sleep = Math.max(sleep, Math.min(MAX_BACKOFF_MS, sleep * 2 ** Math.min(this.failedRounds, 30)));
      this.options.log?.('webhook round failed', error);
    }
    if (!this.stopped) {
      this.timer = setTimeout(() => this.wake(), sleep);
      this.timer.unref();
    }
  }

  /** Creates the deliveries of the next page of events; returns how many events it read. */
  async fanOut(): Promise<number> {
    return this.options.store.transaction(async (tx) => {
      const after = await tx.webhookDeliveries.claimCursor(CURSOR);
      const events = await tx.events.listHeadersAfter(after, FANOUT_PAGE);
      const last = events.at(-1);
      if (last === undefined) return 0;
      const accounts = [...new Set(events.map((e) => e.accountId))];
      const endpoints = await tx.webhooks.listForAccounts(accounts);
      const deliveries: WebhookDeliveryRecord[] = [];
      const at = this.now();
      for (const event of events) {
        for (const endpoint of endpoints) {
          if (endpoint.accountId !== event.accountId) continue;
          // A disabled endpoint gets nothing; one enabled again gets nothing from while it was disabled.
          if (endpoint.disabledAt !== null) continue;
          if (endpoint.eventTypes.length > 0 && !endpoint.eventTypes.includes(event.type)) continue;
          // An endpoint receives the events written after it was registered (or last enabled), not the
          // account's history.
          if (event.createdAt < endpoint.enabledAt) continue;
          deliveries.push({
            id: newId('dlv', at),
            webhookId: endpoint.id,
            accountId: event.accountId,
            eventId: event.id,
            eventSeq: event.seq,
            status: 'pending',
            attempts: 0,
            nextAttemptAt: at,
            lastStatusCode: null,
            lastError: null,
            lastAttemptAt: null,
            deliveredAt: null,
            createdAt: at,
          });
        }
      }
      await tx.webhookDeliveries.insertMany(deliveries);
      await tx.webhookDeliveries.advanceCursor(CURSOR, last.seq);
      return events.length;
    });
  }

  /** Leases and attempts due deliveries; returns how many it leased. */
  async deliverDue(): Promise<number> {
    const { store, instanceId } = this.options;
    const now = this.now();
    const leasedUntil = now + LEASE_MS;
    const leased = await store.webhookDeliveries.leaseDue(instanceId, now, leasedUntil, LEASE_BATCH);
    await Promise.all(leased.map((delivery) => this.attemptOrPostpone(delivery, leasedUntil)));
    return leased.length;
  }

  /** A fault of ours (storage, a secret that will not open) postpones the delivery like a failed attempt. */
  private async attemptOrPostpone(delivery: WebhookDeliveryRecord, leasedUntil: number): Promise<void> {
    try {
      await this.attempt(delivery, leasedUntil);
    } catch (error) {
      this.options.log?.(`webhook delivery ${delivery.id} failed inside the gateway`, error);
      await this.recordFailure(delivery, this.now(), {
        statusCode: null,
        error: 'internal error of the gateway; see its log',
      }).catch(() => {});
    }
  }

  /**
   * Records an attempt that did not deliver: pending again at its next retry time (a receiver's
   * Retry-After counts when it answered), or failed once retries are over. Returns whether it will retry.
   */
  private async recordFailure(
    delivery: WebhookDeliveryRecord,
    at: number,
    outcome: { statusCode: number | null; error: string; retryAfterMs?: number | undefined },
  ): Promise<boolean> {
    const attempts = delivery.attempts + 1;
    const next = nextAttemptAt(
      attempts,
      delivery.createdAt,
      at,
      this.options.retryBaseMs,
      this.options.retryForMs,
      outcome.retryAfterMs,
    );
    await this.options.store.webhookDeliveries.recordAttempt(delivery.id, this.options.instanceId, {
      status: next === undefined ? 'failed' : 'pending',
      attempts,
      nextAttemptAt: next ?? null,
      lastStatusCode: outcome.statusCode,
      lastError: outcome.error,
      lastAttemptAt: at,
      deliveredAt: null,
    });
    return next !== undefined;
  }

  private async attempt(delivery: WebhookDeliveryRecord, leasedUntil: number): Promise<void> {
    const { store, webhooks, instanceId } = this.options;
    const endpoint = await store.webhooks.get(delivery.webhookId);
    const event = await this.eventOf(delivery);
    const attempts = delivery.attempts + 1;
    if (endpoint !== undefined && endpoint.disabledAt !== null) {
      // Disabled after this delivery was created (the fan-out creates none for a disabled endpoint) or
      // made pending again by a redeliver that raced the disabling: failed unsent, as disable() does.
      await store.webhookDeliveries.recordAttempt(delivery.id, instanceId, {
        ...outcomeSoFar(delivery),
        status: 'failed',
        nextAttemptAt: null,
        lastError: DISABLED_PENDING_ERROR,
      });
      return;
    }
    if (endpoint === undefined || event === undefined) {
      await store.webhookDeliveries.recordAttempt(delivery.id, instanceId, {
        status: 'failed',
        attempts,
        nextAttemptAt: null,
        lastStatusCode: null,
        lastError: endpoint === undefined ? 'the endpoint was deleted' : 'the event no longer exists',
        lastAttemptAt: this.now(),
        deliveredAt: null,
      });
      return;
    }
    const body = JSON.stringify(paymentEventMessage(event));
    const sentAt = new Date(this.now());
    // webhook-id is the event id, the same on every attempt, so receivers can drop repeats.
    const signature = new Webhook(webhooks.secretOf(endpoint)).sign(event.id, sentAt, body);
    if (this.now() > leasedUntil - ATTEMPT_TIMEOUT_MS - LEASE_MARGIN_MS) {
      // Too little of the lease is left for a whole attempt (storage was slow): an attempt started now
      // could outlive the lease and overlap another instance's. Handed back unsent, due as it was.
      await store.webhookDeliveries.release(delivery.id, instanceId);
      return;
    }
    // One span per delivery attempt when tracing is on; the receiver gets its W3C trace context.
    const outcome = await withSpan(
      'webhook.deliver',
      'client',
      deliveryAttributes(delivery, event, attempts),
      async (span) => {
        if (event.paymentId !== null) tracer().notePayment(event.paymentId);
        const headers: Record<string, string> = {
          'webhook-id': event.id,
          'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
          'webhook-signature': signature,
        };
        tracer().inject(headers);
        const sent = await postWebhook(endpoint.url, headers, body, this.options.policy);
        if (sent.statusCode !== null) span.setAttribute('http.response.status_code', sent.statusCode);
        if (!sent.ok) span.fail(new WebhookNotDelivered());
        return sent;
      },
    );
    const at = this.now();
    if (outcome.ok) {
      await store.webhookDeliveries.recordAttempt(delivery.id, instanceId, {
        status: 'succeeded',
        attempts,
        nextAttemptAt: null,
        lastStatusCode: outcome.statusCode,
        lastError: null,
        lastAttemptAt: at,
        deliveredAt: at,
      });
      this.options.onAttempt?.('succeeded');
      return;
    }
    if (outcome.statusCode === GONE) {
      // 410 Gone: the receiver asks to stop (the REST-hooks convention: unsubscribe). This delivery is
      // not tried again and the endpoint is disabled, its other pending deliveries failed, in one
      // transaction, until its account enables it again.
      await store.transaction(async (tx) => {
        await tx.webhookDeliveries.recordAttempt(delivery.id, instanceId, {
          status: 'failed',
          attempts,
          nextAttemptAt: null,
          lastStatusCode: GONE,
          lastError: 'answered HTTP 410 Gone: not retried, and the endpoint was disabled',
          lastAttemptAt: at,
          deliveredAt: null,
        });
        // Whatever became of this delivery's lease: the endpoint said so.
        await tx.webhooks.disable(
          endpoint.id,
          at,
          `answered HTTP 410 Gone to delivery ${delivery.id}`,
          DISABLED_PENDING_ERROR,
        );
      });
      this.options.onAttempt?.('failed');
      return;
    }
    const retrying = await this.recordFailure(delivery, at, {
      statusCode: outcome.statusCode,
      error: outcome.error ?? `answered HTTP ${outcome.statusCode}`,
      retryAfterMs: outcome.statusCode === null ? undefined : retryAfterMs(outcome.retryAfter, at),
    });
    this.options.onAttempt?.(retrying ? 'retrying' : 'failed');
  }

  private async eventOf(delivery: WebhookDeliveryRecord): Promise<EventRecord | undefined> {
    const [event] = await this.options.store.events.listAfter(delivery.accountId, delivery.eventSeq - 1, 1);
    return event?.id === delivery.eventId ? event : undefined;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}

/** A delivery's recorded state as it is, to write back when nothing was sent. */
function outcomeSoFar(delivery: WebhookDeliveryRecord): DeliveryAttempt {
  return {
    status: delivery.status,
    attempts: delivery.attempts,
    nextAttemptAt: delivery.nextAttemptAt,
    lastStatusCode: delivery.lastStatusCode,
    lastError: delivery.lastError,
    lastAttemptAt: delivery.lastAttemptAt,
    deliveredAt: delivery.deliveredAt,
  };
}

/** What a delivery span says: the endpoint, event and attempt, never the URL (it may hold a token). */
function deliveryAttributes(
  delivery: WebhookDeliveryRecord,
  event: EventRecord,
  attempt: number,
): SpanAttributes {
  return {
    'gate402.webhook.id': delivery.webhookId,
    'gate402.webhook.delivery.id': delivery.id,
    'gate402.event.id': event.id,
    'gate402.event.type': event.type,
    'gate402.webhook.attempt': attempt,
  };
}

/** A delivery attempt the endpoint did not take (no answer, or not 2xx): the span's error type. */
class WebhookNotDelivered extends Error {
  override readonly name = 'WebhookNotDelivered';
}
