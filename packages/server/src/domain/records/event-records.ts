// The outbox (payment events) and the webhook endpoints and deliveries that read it.

/** An event without its payload. */
export type EventHeader = Omit<EventRecord, 'data'>;

export interface EventRecord {
  /** Monotonic position in the outbox. */
  readonly seq: number;
  readonly id: string;
  readonly accountId: string;
  readonly type: string;
  readonly paymentId: string | null;
  readonly data: Readonly<Record<string, unknown>>;
  readonly createdAt: number;
}

export interface WebhookRecord {
  readonly id: string;
  readonly accountId: string;
  readonly url: string;
  /** Event types it receives; empty: every type. */
  readonly eventTypes: readonly string[];
  /** The Standard Webhooks signing secret (whsec_…), sealed under the master key. */
  readonly sealedSecret: string;
  readonly createdAt: number;
  /**
   * When it was last enabled (registered, or enabled again): it receives the events written from then
   * on, none from before, so nothing that happened while it was disabled is sent afterwards.
   */
  readonly enabledAt: number;
  /** When it was disabled (its receiver answered 410 Gone, or its account asked); null while enabled. */
  readonly disabledAt: number | null;
  /** Why it was disabled, for its account to read; null while enabled. */
  readonly disabledReason: string | null;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface WebhookDeliveryRecord {
  readonly id: string;
  readonly webhookId: string;
  readonly accountId: string;
  readonly eventId: string;
  readonly eventSeq: number;
  readonly status: DeliveryStatus;
  readonly attempts: number;
  /** When the next attempt is due; null once it succeeded or was given up. */
  readonly nextAttemptAt: number | null;
  readonly lastStatusCode: number | null;
  readonly lastError: string | null;
  readonly lastAttemptAt: number | null;
  readonly deliveredAt: number | null;
  readonly createdAt: number;
}

/** The outcome of one attempt, written by the instance holding the delivery's lease. */
export interface DeliveryAttempt {
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly nextAttemptAt: number | null;
  readonly lastStatusCode: number | null;
  readonly lastError: string | null;
  /** Null when nothing was ever sent (e.g. failed unsent because its endpoint was disabled). */
  readonly lastAttemptAt: number | null;
  readonly deliveredAt: number | null;
}
