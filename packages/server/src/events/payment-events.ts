import type { Config } from '../config.ts';
import type { OutboundPolicy } from '../outbound/ssrf-guard.ts';
import { type Job, namedJob } from '../scheduling/job.ts';
import { SecretBox } from '../services/custody/secret-box.ts';
import type { Store } from '../store/store.ts';
import { EventHub } from './event-hub.ts';
import { type EventSignal, SingleInstanceEventSignal } from './event-signal.ts';
import { RedisEventSignal } from './redis-event-signal.ts';
import { RetentionJob } from './retention-job.ts';
import { WebhookService } from './webhooks/webhook-service.ts';
import { WebhookWorker } from './webhooks/webhook-worker.ts';

export type PaymentEventsConfig = Pick<
  Config,
  | 'redisUrl'
  | 'allowPrivateOutboundUrls'
  | 'outboundPorts'
  | 'eventsPollMs'
  | 'streamHeartbeatMs'
  | 'streamMaxBufferedBytes'
  | 'streamMaxConnectionsPerAccount'
  | 'webhookRetryBaseMs'
  | 'webhookRetryHours'
  | 'eventRetentionDays'
>;

/**
 * Everything that reads the outbox on one instance: the hub (stream), webhook endpoints and their
 * worker, and the retention job that deletes what none of them needs any more.
 */
export interface PaymentEvents {
  readonly hub: EventHub;
  readonly webhooks: WebhookService;
  readonly worker: WebhookWorker;
  readonly retention: RetentionJob;
  readonly stream: {
    readonly heartbeatMs: number;
    readonly maxBufferedBytes: number;
    readonly maxConnectionsPerAccount: number;
    readonly authTimeoutMs?: number;
  };
  /** Its background jobs (webhook delivery, retention), started by the gateway with the others. */
  readonly jobs: readonly Job[];
  /** Starts reading the outbox (the stream's hub); webhooks are delivered by `jobs`. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface PaymentEventsParts {
  readonly store: Store;
  readonly masterKey: Uint8Array;
  readonly instanceId: string;
  readonly config: PaymentEventsConfig;
  /** Redis channel for wake-ups; tests use their own. */
  readonly redisChannel?: string;
  readonly authTimeoutMs?: number;
  readonly log?: (message: string, error: unknown) => void;
  /** Told the result of every webhook delivery attempt (metrics). */
  readonly onWebhookAttempt?: (result: 'succeeded' | 'retrying' | 'failed') => void;
}

/**
 * Builds the event side of an instance. With REDIS_URL, instances wake each other through Redis
 * pub/sub; without it, a commit wakes this instance at once and other processes on the same storage
 * within EVENTS_POLL_MS.
 */
export async function createPaymentEvents(parts: PaymentEventsParts): Promise<PaymentEvents> {
  const { config, store } = parts;
  let signal: EventSignal;
  if (config.redisUrl === undefined) {
    signal = new SingleInstanceEventSignal();
  } else {
    const redis = new RedisEventSignal(config.redisUrl, parts.redisChannel, (error) =>
      parts.log?.('redis event signal problem', error),
    );
    await redis.connect();
    signal = redis;
  }
  const policy: OutboundPolicy = {
    allowPrivate: config.allowPrivateOutboundUrls,
    ports: config.outboundPorts,
  };
  const hub = new EventHub({
    store,
    signal,
    pollIntervalMs: config.eventsPollMs,
    ...(parts.log === undefined ? {} : { log: parts.log }),
  });
  const webhooks = new WebhookService(store, new SecretBox(parts.masterKey), policy);
  const worker = new WebhookWorker({
    store,
    hub,
    webhooks,
    policy,
    instanceId: parts.instanceId,
    retryBaseMs: config.webhookRetryBaseMs,
    retryForMs: config.webhookRetryHours * 3_600_000,
    pollIntervalMs: config.eventsPollMs,
    ...(parts.log === undefined ? {} : { log: parts.log }),
    ...(parts.onWebhookAttempt === undefined ? {} : { onAttempt: parts.onWebhookAttempt }),
  });
  webhooks.onDeliveryDue = () => worker.wake();
  const retention = new RetentionJob({
    store,
    instanceId: parts.instanceId,
    retentionDays: config.eventRetentionDays,
    ...(parts.log === undefined ? {} : { log: parts.log }),
  });
  return {
    hub,
    webhooks,
    worker,
    retention,
    stream: {
      heartbeatMs: config.streamHeartbeatMs,
      maxBufferedBytes: config.streamMaxBufferedBytes,
      maxConnectionsPerAccount: config.streamMaxConnectionsPerAccount,
      ...(parts.authTimeoutMs === undefined ? {} : { authTimeoutMs: parts.authTimeoutMs }),
    },
    jobs: [namedJob('webhook-delivery', worker), namedJob('event-retention', retention)],
    start: () => hub.start(),
    // Stops the jobs too (stopping one that never started is a no-op), so nothing reads a closed hub.
    close: async () => {
      await retention.stop();
      await worker.stop();
      await hub.stop();
      await signal.close();
    },
  };
}
