import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyPaymentWebhook, WebhookVerificationError } from '../../src/payment-webhook.ts';

const secret = `whsec_${randomBytes(32).toString('base64')}`;
const NOW = Date.parse('2026-11-28T12:00:00Z');
const event = {
  id: 'evt_01',
  type: 'payment.reverted',
  createdAt: NOW,
  amount: 0.02,
  data: { paymentId: 'pay_01', status: 'reverted' },
};
const body = JSON.stringify(event);

/** Headers as gate402's webhook worker sends them, signed by the Standard Webhooks library it uses. */
function delivery(options: { id?: string; at?: number; payload?: string; key?: string } = {}) {
  const at = new Date(options.at ?? NOW);
  const id = options.id ?? event.id;
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(options.key ?? secret).sign(id, at, options.payload ?? body),
  };
}
const verify = (headers: Record<string, string>, payload: string | Uint8Array = body) =>
  verifyPaymentWebhook(secret, headers, payload, { now: () => NOW });
const refused = (run: () => unknown, message: RegExp) =>
  assert.throws(run, (e: unknown) => e instanceof WebhookVerificationError && message.test(e.message));

describe('verifyPaymentWebhook', () => {
  it("returns the event of a delivery signed with the endpoint's secret, from text, bytes or fetch Headers", () => {
    assert.deepEqual(verify(delivery()), event);
    assert.deepEqual(verify(delivery(), Buffer.from(body)), event);
    assert.deepEqual(verifyPaymentWebhook(secret, new Headers(delivery()), body, { now: () => NOW }), event);
  });

  it('accepts any one of several signatures (a secret being rotated)', () => {
    const headers = delivery();
    const other = delivery({ key: `whsec_${randomBytes(32).toString('base64')}` })['webhook-signature'];
    assert.deepEqual(
      verify({ ...headers, 'webhook-signature': `${other} ${headers['webhook-signature']}` }),
      event,
    );
  });

  it('refuses a body changed by one character, another secret, a body of another event, and missing headers', () => {
    refused(() => verify(delivery(), body.replace('0.02', '0.03')), /no webhook-signature matches/);
    refused(
      () => verify(delivery({ key: `whsec_${randomBytes(32).toString('base64')}` })),
      /no webhook-signature/,
    );
    const other = JSON.stringify({ ...event, id: 'evt_02' });
    refused(() => verify(delivery({ payload: other }), other), /not the event webhook-id names/);
    const { 'webhook-signature': _, ...unsigned } = delivery();
    refused(() => verify(unsigned), /missing/);
    refused(() => verify({ ...delivery(), 'webhook-signature': 'v2,abc' }), /no webhook-signature/);
  });

  it('refuses a delivery older or newer than the tolerance (a replay), and a timestamp that is not one', () => {
    refused(() => verify(delivery({ at: NOW - 301_000 })), /more than 300 s/);
    refused(() => verify(delivery({ at: NOW + 301_000 })), /more than 300 s/);
    assert.deepEqual(
      verifyPaymentWebhook(secret, delivery({ at: NOW - 3_600_000 }), body, {
        now: () => NOW,
        toleranceSeconds: 7_200,
      }),
      event,
    );
    refused(() => verify({ ...delivery(), 'webhook-timestamp': '1e9' }), /not a Unix time/);
  });
});
