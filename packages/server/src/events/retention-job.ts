import { PeriodicWorker } from '../scheduling/periodic-worker.ts';
import type { Store } from '../store/store.ts';

export interface RetentionJobOptions {
  readonly store: Store;
  /** Names this process in the job lease. */
  readonly instanceId: string;
  /** Outbox events and finished webhook deliveries older than this many days are deleted. */
  readonly retentionDays: number;
  /** How often the job runs over all instances together; default one hour. */
  readonly intervalMs?: number;
  /** Rows deleted per statement, so no delete holds the write lock for long; default 1,000. */
  readonly batchSize?: number;
  readonly now?: () => number;
  readonly log?: (message: string, error: unknown) => void;
}

export interface RetentionResult {
  readonly deliveries: number;
  readonly events: number;
  readonly idempotencyKeys: number;
}

const JOB = 'retention';
/** The outbox cursor of the webhook fan-out (WebhookWorker): events after it are not fanned out yet. */
const WEBHOOK_CURSOR = 'webhooks';
const DAY_MS = 86_400_000;
/** README: Idempotency-Keys are kept 24 hours. */
const IDEMPOTENCY_KEY_MS = DAY_MS;

/**
 * Deletes what the outbox no longer needs, on one instance per interval: every instance ticks, and
 * the one that claims the job lease runs it; the lease lasts the whole interval, so the others find
 * it taken until the next run is due (and one that died mid-run is replaced then).
 *
 * What is kept, whatever its age: a pending webhook delivery and its event (retries and redelivers are
 * sent from the event), any event a delivery names, and events the webhook fan-out has not read yet.
 * Events younger than `retentionDays` stay, so a stream resumes with `since` from any of them.
 * Finished deliveries (the delivery log) go with their events. Idempotency-Keys older than a day go too.
 */
export class RetentionJob {
  private readonly now: () => number;
  private readonly intervalMs: number;
  private readonly worker: PeriodicWorker;

  constructor(private readonly options: RetentionJobOptions) {
    this.now = options.now ?? Date.now;
    this.intervalMs = options.intervalMs ?? 3_600_000;
    this.worker = new PeriodicWorker(() => this.runOnce(), {
      // Instances look several times per interval, so a run is late by at most a tenth of it.
      intervalMs: Math.max(1_000, Math.floor(this.intervalMs / 10)),
      onError: (error) => options.log?.('retention job failed', error),
      unref: true,
    });
  }

  start(): void {
    this.worker.start();
  }

  stop(): Promise<void> {
    return this.worker.stop();
  }

  /** One run if this instance gets the lease; undefined when another instance holds it. */
  async runOnce(): Promise<RetentionResult | undefined> {
    const { store, instanceId, retentionDays } = this.options;
    const at = this.now();
    if (!(await store.jobLeases.claim(JOB, instanceId, at, at + this.intervalMs))) return undefined;
    const before = at - retentionDays * DAY_MS;
    const batch = this.options.batchSize ?? 1_000;
    // Deliveries first: an event is deleted only once no delivery names it.
    const deliveries = await drain(
      (limit) => store.webhookDeliveries.deleteFinishedBefore(before, limit),
      batch,
    );
    const events = await drain((limit) => store.events.deleteBefore(before, WEBHOOK_CURSOR, limit), batch);
    const idempotencyKeys = await store.idempotency.purge(at - IDEMPOTENCY_KEY_MS);
    return { deliveries, events, idempotencyKeys };
  }
}

async function drain(deleteBatch: (limit: number) => Promise<number>, batch: number): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await deleteBatch(batch);
    total += deleted;
    if (deleted < batch) return total;
  }
}
