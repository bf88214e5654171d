import { Webhook } from 'standardwebhooks';
import { newId } from '../domain/ids.ts';
import type { EventHub } from '../events/event-hub.ts';
import { paymentEventMessage } from '../events/payment-event-message.ts';
import type { OutboundPolicy } from '../outbound/ssrf-guard.ts';
import type { EventRecord, Store, WebhookDeliveryRecord } from '../store/store.ts';
import { nextAttemptAt, retryAfterMs } from '../webhooks/retry-schedule.ts';
import { postWebhook } from '../webhooks/webhook-sender.ts';
import type { WebhookService } from '../webhooks/webhook-service.ts';

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
/** Longer than one attempt can take (10 s timeout), so a lease never lapses under a running attempt. */
const LEASE_MS = 60_000;
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
  private running: Promise<void> | undefined;
  private runAgain = false;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly options: WebhookWorkerOptions) {}

  start(): void {
    this.stopped = false;
    this.unsubscribe = this.options.hub.onAdvance(() => this.wake());
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    if (this.timer !== undefined) clearTimeout(this.timer);
    await this.running;
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
    let sleep = this.options.pollIntervalMs;
    try {
      while ((await this.fanOut()) === FANOUT_PAGE) {}
      while ((await this.deliverDue()) === LEASE_BATCH) {}
      const due = await this.options.store.webhookDeliveries.nextDueAt();
      if (due !== undefined) sleep = Math.max(5, Math.min(sleep, due - this.now()));
    } catch (error) {
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
      const events = await tx.events.listAllAfter(after, FANOUT_PAGE);
      const last = events.at(-1);
      if (last === undefined) return 0;
      const accounts = [...new Set(events.map((e) => e.accountId))];
      const endpoints = await tx.webhooks.listForAccounts(accounts);
      const deliveries: WebhookDeliveryRecord[] = [];
      const at = this.now();
      for (const event of events) {
        for (const endpoint of endpoints) {
          if (endpoint.accountId !== event.accountId) continue;
          if (endpoint.eventTypes.length > 0 && !endpoint.eventTypes.includes(event.type)) continue;
          // An endpoint receives the events written after it was registered, not the account's history.
          if (event.createdAt < endpoint.createdAt) continue;
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
    const leased = await store.webhookDeliveries.leaseDue(instanceId, now, now + LEASE_MS, LEASE_BATCH);
    await Promise.all(leased.map((delivery) => this.attemptOrPostpone(delivery)));
    return leased.length;
  }

  /** A fault of ours (storage, a secret that will not open) postpones the delivery like a failed attempt. */
  private async attemptOrPostpone(delivery: WebhookDeliveryRecord): Promise<void> {
    try {
      await this.attempt(delivery);
    } catch (error) {
      this.options.log?.(`webhook delivery ${delivery.id} failed inside the gateway`, error);
      const at = this.now();
      const attempts = delivery.attempts + 1;
      const next = nextAttemptAt(
        attempts,
        delivery.createdAt,
        at,
        this.options.retryBaseMs,
        this.options.retryForMs,
      );
      await this.options.store.webhookDeliveries
        .recordAttempt(delivery.id, this.options.instanceId, {
          status: next === undefined ? 'failed' : 'pending',
          attempts,
          nextAttemptAt: next ?? null,
          lastStatusCode: null,
          lastError: 'internal error of the gateway; see its log',
          lastAttemptAt: at,
          deliveredAt: null,
        })
        .catch(() => {});
    }
  }

  private async attempt(delivery: WebhookDeliveryRecord): Promise<void> {
    const { store, webhooks, instanceId } = this.options;
    const endpoint = await store.webhooks.get(delivery.webhookId);
    const event = await this.eventOf(delivery);
    const attempts = delivery.attempts + 1;
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
    const outcome = await postWebhook(
      endpoint.url,
      {
        'webhook-id': event.id,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body,
      this.options.policy,
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
    // 410 Gone: the endpoint says this will not change, so the delivery is not tried again.
    const gone = outcome.statusCode === GONE;
    const next = gone
      ? undefined
      : nextAttemptAt(
          attempts,
          delivery.createdAt,
          at,
          this.options.retryBaseMs,
          this.options.retryForMs,
          outcome.statusCode === null ? undefined : retryAfterMs(outcome.retryAfter, at),
        );
    await store.webhookDeliveries.recordAttempt(delivery.id, instanceId, {
      status: next === undefined ? 'failed' : 'pending',
      attempts,
      nextAttemptAt: next ?? null,
      lastStatusCode: outcome.statusCode,
      lastError:
        outcome.error ??
        (gone ? 'answered HTTP 410 Gone: not retried' : `answered HTTP ${outcome.statusCode}`),
      lastAttemptAt: at,
      deliveredAt: null,
    });
    this.options.onAttempt?.(next === undefined ? 'failed' : 'retrying');
  }

  private async eventOf(delivery: WebhookDeliveryRecord): Promise<EventRecord | undefined> {
    const [event] = await this.options.store.events.listAfter(delivery.accountId, delivery.eventSeq - 1, 1);
    return event?.id === delivery.eventId ? event : undefined;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}
