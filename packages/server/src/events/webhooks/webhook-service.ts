import { randomBytes } from 'node:crypto';
import { GatewayError, invalidParameters } from '../../domain/gateway-error.ts';
import { newId } from '../../domain/ids.ts';
import { EVENT_TYPES } from '../../domain/payment-status.ts';
import type {
  DeliveryStatus,
  WebhookDeliveryRecord,
  WebhookRecord,
} from '../../domain/records/event-records.ts';
import { type OutboundPolicy, OutboundUrlError, resolveOutbound } from '../../outbound/ssrf-guard.ts';
import type { SecretBox } from '../../services/custody/secret-box.ts';
import type { Store } from '../../store/store.ts';

/** A webhook endpoint as the API shows it; the secret only once, when it is created. */
export interface WebhookView {
  id: string;
  url: string;
  eventTypes: string[];
  createdAt: number;
  /** False once its receiver answered 410 Gone or its account disabled it: nothing is sent to it. */
  enabled: boolean;
  /** When it was disabled; null while enabled. */
  disabledAt: number | null;
  /** Why, e.g. `answered HTTP 410 Gone to delivery dlv_…`; null while enabled. */
  disabledReason: string | null;
}

export interface CreatedWebhook extends WebhookView {
  /** The Standard Webhooks signing secret (`whsec_…`): shown once, keep it to verify deliveries. */
  secret: string;
}

export interface DeliveryView {
  id: string;
  eventId: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  lastAttemptAt: number | null;
  deliveredAt: number | null;
  createdAt: number;
}

/** Endpoints per account; more is almost always a bug in the caller's setup code. */
export const MAX_WEBHOOKS_PER_ACCOUNT = 20;
const MAX_URL_LENGTH = 2_048;

/** Webhook endpoints of an account and their delivery logs. Deliveries themselves: webhook-worker.ts. */
export class WebhookService {
  /** Told when a delivery became due by hand, so the worker attempts it now rather than at its next look. */
  onDeliveryDue: () => void = () => {};

  constructor(
    private readonly store: Store,
    private readonly secrets: SecretBox,
    private readonly policy: OutboundPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  async create(
    accountId: string,
    input: { url: string; eventTypes?: readonly string[] },
  ): Promise<CreatedWebhook> {
    const eventTypes = [...new Set(input.eventTypes ?? [])];
    const unknown = eventTypes.find((t) => !(EVENT_TYPES as readonly string[]).includes(t));
    if (unknown !== undefined) {
      throw invalidParameters({ eventTypes: `"${unknown}" is not one of ${EVENT_TYPES.join(', ')}` });
    }
    if (input.url.length > MAX_URL_LENGTH)
      throw invalidParameters({ url: `must be at most ${MAX_URL_LENGTH} characters` });
    let url: string;
    try {
      // Checked now so a mistake is reported at once; checked again (and pinned) before every delivery,
      // since what a name resolves to can change.
      url = (await resolveOutbound(input.url, this.policy)).url.href;
    } catch (error) {
      if (error instanceof OutboundUrlError) throw invalidParameters({ url: error.reason });
      throw error;
    }
    if ((await this.store.webhooks.listByAccount(accountId)).length >= MAX_WEBHOOKS_PER_ACCOUNT) {
      throw invalidParameters({ url: `an account may have at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks` });
    }
    const at = this.now();
    const id = newId('whk', at);
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const record: WebhookRecord = {
      id,
      accountId,
      // As parsed, the address deliveries go to: surrounding spaces gone, characters a URL cannot
      // carry (NUL, which PostgreSQL text refuses) percent-encoded.
      url,
      eventTypes,
      sealedSecret: this.secrets.seal(Buffer.from(secret, 'utf8'), secretContext(id)),
      createdAt: at,
      enabledAt: at,
      disabledAt: null,
      disabledReason: null,
    };
    await this.store.webhooks.insert(record);
    return { ...view(record), secret };
  }

  async list(accountId: string): Promise<WebhookView[]> {
    return (await this.store.webhooks.listByAccount(accountId)).map(view);
  }

  async delete(accountId: string, id: string): Promise<void> {
    if (!(await this.store.webhooks.delete(accountId, id))) throw notFound(id);
  }

  /**
   * Enables or disables an endpoint; asking for the state it is in changes nothing. Disabled (by its
   * account here, or by a 410 Gone: webhook-worker.ts), it gets no new deliveries and its pending ones
   * are failed; enabled again, it receives the events written from then on, none from while it was
   * disabled (a delivery failed meanwhile can still be redelivered by hand).
   */
  async update(accountId: string, id: string, change: { enabled: boolean }): Promise<WebhookView> {
    const webhook = await this.owned(accountId, id);
    const at = this.now();
    if (change.enabled && webhook.disabledAt !== null) {
      await this.store.webhooks.enable(id, at);
    } else if (!change.enabled && webhook.disabledAt === null) {
      await this.store.webhooks.disable(id, at, 'disabled by its account', DISABLED_PENDING_ERROR);
    }
    return view(await this.owned(accountId, id));
  }

  async deliveries(accountId: string, id: string, limit: number): Promise<DeliveryView[]> {
    await this.owned(accountId, id);
    return (await this.store.webhookDeliveries.listByWebhook(id, limit)).map(deliveryView);
  }

  /** Makes a delivery due now again, whatever happened to it before (e.g. the endpoint was down a day). */
  async redeliver(accountId: string, webhookId: string, deliveryId: string): Promise<DeliveryView> {
    const webhook = await this.owned(accountId, webhookId);
    if (webhook.disabledAt !== null) {
      // It would only be failed again, unsent: the endpoint is enabled first, on purpose.
      throw invalidParameters({
        id: `webhook ${webhookId} is disabled (${webhook.disabledReason}); enable it first`,
      });
    }
    const delivery = await this.store.webhookDeliveries.get(deliveryId);
    if (delivery === undefined || delivery.webhookId !== webhookId) {
      throw new GatewayError('NOT_FOUND', { message: `No delivery ${deliveryId} of webhook ${webhookId}.` });
    }
    const due = await this.store.webhookDeliveries.redeliver(deliveryId, this.now());
    if (due === undefined) throw new GatewayError('NOT_FOUND', { message: `No delivery ${deliveryId}.` });
    this.onDeliveryDue();
    return deliveryView(due);
  }

  /** The endpoint's signing secret, for the delivery worker. */
  secretOf(webhook: WebhookRecord): string {
    return Buffer.from(this.secrets.open(webhook.sealedSecret, secretContext(webhook.id))).toString('utf8');
  }

  /** Another account's endpoint is answered exactly like a missing one. */
  private async owned(accountId: string, id: string): Promise<WebhookRecord> {
    const webhook = await this.store.webhooks.get(id);
    if (webhook === undefined || webhook.accountId !== accountId) throw notFound(id);
    return webhook;
  }
}

/** What a pending delivery of an endpoint that was disabled says, in the delivery log. */
export const DISABLED_PENDING_ERROR = 'not sent: the endpoint was disabled';

function secretContext(webhookId: string): string {
  return `webhook:${webhookId}`;
}

function notFound(id: string): GatewayError {
  return new GatewayError('NOT_FOUND', { message: `No webhook ${id}.` });
}

function view(webhook: WebhookRecord): WebhookView {
  return {
    id: webhook.id,
    url: webhook.url,
    eventTypes: [...webhook.eventTypes],
    createdAt: webhook.createdAt,
    enabled: webhook.disabledAt === null,
    disabledAt: webhook.disabledAt,
    disabledReason: webhook.disabledReason,
  };
}

function deliveryView(d: WebhookDeliveryRecord): DeliveryView {
  return {
    id: d.id,
    eventId: d.eventId,
    status: d.status,
    attempts: d.attempts,
    nextAttemptAt: d.nextAttemptAt,
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    lastAttemptAt: d.lastAttemptAt,
    deliveredAt: d.deliveredAt,
    createdAt: d.createdAt,
  };
}
