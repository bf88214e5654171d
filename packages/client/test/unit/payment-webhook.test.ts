import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyPaymentWebhook, WebhookVerificationError } from '../../src/payment-webhook.ts';

const NOT_UTF8 = Buffer.from([0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]);

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

  it('checks the bytes as received: a body that is not UTF-8 is checked as it came, not decoded first', () => {
    const timestamp = String(NOW / 1000);
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const mac = createHmac('sha256', key).update(`evt_bytes.${timestamp}.`).update(NOT_UTF8).digest('base64');
    const headers = {
      'webhook-id': 'evt_bytes',
      'webhook-timestamp': timestamp,
      'webhook-signature': `v1,${mac}`,
    };
    refused(() => verify(headers, NOT_UTF8), /not the event webhook-id names/);
    // The same bytes decoded and encoded again are other bytes: refused at the signature.
    refused(() => verify(headers, NOT_UTF8.toString('utf8')), /no webhook-signature matches/);
  });

  it('reads a header given as an array, and ignores a signature with junk around its base64', () => {
    const headers = delivery();
    assert.deepEqual(
      verify({ ...headers, 'webhook-signature': ['v1,AAAA', headers['webhook-signature']] } as never),
      event,
    );
    refused(
      () => verify({ ...headers, 'webhook-signature': `${headers['webhook-signature']}$$$` }),
      /no webhook-signature/,
    );
  });

  it('throws a TypeError, not a refusal, for a call that is wrong: no secret, a parsed body, no headers, a bad tolerance', () => {
    const typeError = (run: () => unknown, message: RegExp) =>
      assert.throws(run, (e: unknown) => e instanceof TypeError && message.test(e.message));
    typeError(() => verifyPaymentWebhook('', delivery(), body), /secret is empty/);
    typeError(() => verifyPaymentWebhook(undefined as never, delivery(), body), /secret is empty/);
    typeError(() => verifyPaymentWebhook('whsec_***', delivery(), body), /not a whsec_/);
    typeError(() => verifyPaymentWebhook(secret, delivery(), JSON.parse(body)), /raw body/);
    typeError(() => verifyPaymentWebhook(secret, delivery(), { length: 5e8 } as never), /raw body/);
    typeError(() => verifyPaymentWebhook(secret, undefined as never, body), /headers/);
    typeError(
      () => verifyPaymentWebhook(secret, delivery(), body, { toleranceSeconds: Number.NaN }),
      /toleranceSeconds/,
    );
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
