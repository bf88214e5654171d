import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ResponseOf } from './gate402-client.ts';

/** What a payment event says happened; `payment.reverted`: confirmed, then left the chain, paid nothing. */
export type PaymentEventType =
  | 'payment.sent'
  | 'payment.received'
  | 'payment.confirmed'
  | 'payment.finalized'
  | 'payment.failed'
  | 'payment.expired'
  | 'payment.reverted';

/** One payment event, as webhooks deliver it (and the stream sends it). */
export interface PaymentEvent {
  /** The event's id; also the `webhook-id` header, the same on every delivery attempt: drop repeats. */
  readonly id: string;
  readonly type: PaymentEventType;
  /** Unix ms when the event was written. */
  readonly createdAt: number;
  /** The payment's amount in its currency, as the REST API answers it. */
  readonly amount: number;
  /** The payment as GET /payment/status answered when the event was written (`paymentId`, `status`, …). */
  readonly data: ResponseOf<'paymentStatus'>;
}

export interface VerifyWebhookOptions {
  /**
   * How far the `webhook-timestamp` may be from now, in seconds; default 300. A delivery replayed later
   * than that is refused; within it, drop repeats by the event's `id` (the same on every attempt).
   */
  readonly toleranceSeconds?: number;
  /** Unix ms; for tests. */
  readonly now?: () => number;
}

/** A delivery that is not gate402's, was altered, or is too old (or too new) to trust. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
}

/** Header values as Node (`IncomingMessage.headers`), Express (`req.headers`) and fetch (`Headers`) give them. */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * Checks a webhook delivery's Standard Webhooks signature with the endpoint's secret (`whsec_…`, shown
 * once when the webhook was created) and returns the event it carries. Pass the body exactly as
 * received — the raw bytes or text, not JSON parsed and serialized again — or the signature cannot match.
 *
 * ```ts
 * app.post('/gate402-events', express.text({ type: '*\/*' }), (req, res) => {
 *   const event = verifyPaymentWebhook(process.env.GATE402_WEBHOOK_SECRET, req.headers, req.body);
 *   if (event.type === 'payment.reverted') revokeAccess(event.data.paymentId);
 *   res.sendStatus(204);
 * });
 * ```
 *
 * @throws WebhookVerificationError when the delivery's signature, timestamp or body is not right: answer 400.
 * @throws TypeError when the call itself is wrong (no secret, a parsed body): a bug to fix, not a delivery.
 */
export function verifyPaymentWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): PaymentEvent {
  // Mistakes in the caller's code are TypeErrors, not a delivery to refuse: a secret left unset would
  // otherwise refuse every real delivery as forged, and a body already parsed as JSON cannot be checked.
  const key = secretKey(secret);
  if (typeof body !== 'string' && !(body instanceof Uint8Array))
    throw new TypeError(
      'verifyPaymentWebhook needs the raw body (a string or bytes), not parsed JSON: use express.text({ type: "*/*" }) or the like',
    );
  if (typeof headers !== 'object' || headers === null)
    throw new TypeError('verifyPaymentWebhook needs the request headers');
  const tolerance = options.toleranceSeconds ?? 300;
  if (!Number.isFinite(tolerance) || tolerance < 0)
    throw new TypeError('toleranceSeconds must be a number of seconds, 0 or more');

  const id = headerOf(headers, 'webhook-id');
  const timestamp = headerOf(headers, 'webhook-timestamp');
  const signatures = headerOf(headers, 'webhook-signature');
  if (id === undefined || timestamp === undefined || signatures === undefined)
    throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature header');
  if (!/^\d{1,15}$/.test(timestamp))
    throw new WebhookVerificationError('webhook-timestamp is not a Unix time in seconds');
  const now = Math.floor((options.now?.() ?? Date.now()) / 1000);
  if (Math.abs(now - Number(timestamp)) > tolerance)
    throw new WebhookVerificationError(`webhook-timestamp is more than ${tolerance} s from now`);

  // The bytes as received are what was signed: no decoding and re-encoding before the HMAC.
  const bytes =
    typeof body === 'string'
      ? Buffer.from(body, 'utf8')
      : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(bytes).digest();
  // Space-separated `v1,<base64>` entries: several while the endpoint's secret is being rotated.
  const matches = signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || value === undefined || !BASE64.test(value)) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError('no webhook-signature matches this body and secret');

  let event: PaymentEvent;
  try {
    event = JSON.parse(bytes.toString('utf8')) as PaymentEvent;
  } catch {
    throw new WebhookVerificationError('the body is not JSON');
  }
  // The signed id and the body's id are the same event; a body carrying another is not this delivery.
  if (event?.id !== id) throw new WebhookVerificationError('the body is not the event webhook-id names');
  return event;
}

/** Standard base64, padded: a signature with anything else in it is not one. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A header's value; several values of one header (an array) are read as one, space-separated. */
function headerOf(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const value = (headers as Record<string, unknown>)[name];
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) return undefined;
  const parts = value.filter((part): part is string => typeof part === 'string');
  return parts.length === 0 ? undefined : parts.join(' ');
}

/** The key of a `whsec_…` secret; a TypeError when there is none, so a missing setting is loud. */
function secretKey(secret: string): Buffer {
  if (typeof secret !== 'string' || secret.length === 0)
    throw new TypeError(
      'the webhook secret is empty: set it to the secret POST /webhooks answered (whsec_…)',
    );
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const key = Buffer.from(encoded, 'base64');
  if (key.length === 0 || !BASE64.test(encoded))
    throw new TypeError('the webhook secret is not a whsec_… secret (base64 after the prefix)');
  return key;
}
