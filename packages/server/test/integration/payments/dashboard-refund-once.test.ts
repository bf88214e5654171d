import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions } from 'fastify';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { type DashboardApp, startDashboardApp } from '../../support/dashboard-app.ts';
import { bearer } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

interface Session {
  cookie: string;
  csrf: string;
}

/**
 * The dashboard's Refund dialog sends its idempotency key in the body (no API key, so the API's
 * Idempotency-Key plugin does not see it): two confirmations of one dialog at the same instant make one
 * refund, and the other is a clean answer (409 IDEMPOTENCY_KEY_IN_USE, or the same refund), never a 500.
 * On the real Solana localnet and a real SQLite file.
 */
describe('refunds from the dashboard, submitted twice at once', { timeout: 120_000 }, () => {
  let chain: TestChain;
  let gw: DashboardApp;
  let session: Session;
  let apiKey: string;
  let seller: string;
  let paymentId: string;

  const as = (options: InjectOptions): InjectOptions => ({
    ...options,
    headers: {
      ...(options.headers as Record<string, string>),
      cookie: session.cookie,
      'x-csrf-token': session.csrf,
    },
  });
  const dashboard = async (method: 'GET' | 'POST', url: string, payload?: object) =>
    gw.app.inject(as({ method, url: `/dashboard/api${url}`, ...(payload === undefined ? {} : { payload }) }));
  const refund = (body: object) => dashboard('POST', `/payments/${paymentId}/refund`, body);
  const refundsOfPayment = async () =>
    (await dashboard('GET', `/payments/${paymentId}`)).json().refunds as {
      /** What is left of the 0.5 after every refund made, confirmed or under way (exact, from atomic units). */
      refundable: number;
      payments: { paymentId: string }[];
    };

  before(async () => {
    chain = await startTestChain();
    gw = await startDashboardApp({ networks: new NetworkRegistry([chain.adapter]) });
    const signup = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/signup',
      payload: { email: 'shop@example.test', password: 'a long enough password' },
    });
    assert.equal(signup.statusCode, 200, signup.body);
    // Premium: the bursts below stay under the rate limit.
    await gw.services.accounts.setPlan(signup.json().accountId, { plan: 'premium' });
    session = {
      cookie: String(signup.headers['set-cookie']).split(';')[0] ?? '',
      csrf: signup.json().csrfToken,
    };
    const wallet = async () => {
      const res = await dashboard('POST', '/wallets', { chain: 'solana' });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().address as string;
    };
    const buyer = await wallet();
    seller = await wallet();
    for (const address of [buyer, seller]) {
      const funded = await dashboard('POST', `/wallets/${address}/faucet`);
      assert.equal(funded.statusCode, 200, funded.body);
    }
    const key = await dashboard('POST', '/keys', { name: 'shop' });
    assert.equal(key.statusCode, 200, key.body);
    apiKey = key.json().key;

    const sent = await gw.app.inject({
      method: 'POST',
      url: '/payment/send',
      headers: bearer(apiKey),
      payload: { walletAddress: buyer, recipientAddress: seller, amount: 0.5 },
    });
    assert.equal(sent.statusCode, 200, sent.body);
    const received = await gw.app.inject({
      method: 'POST',
      url: '/payment/receive',
      headers: bearer(apiKey),
      payload: { walletAddress: seller, paymentProof: sent.json().paymentProof, expectedAmount: 0.5 },
    });
    assert.equal(received.statusCode, 200, received.body);
    paymentId = received.json().paymentId;
  });

  after(async () => {
    await gw?.close();
    await chain?.close();
  });

  it('makes one refund of a burst of submits with one key; the others are 409 or the same refund', async () => {
    const body = { amount: 0.1, idempotencyKey: 'dialog-1' };
    const answers = await Promise.all(Array.from({ length: 6 }, () => refund(body)));
    const statuses = answers.map((a) => a.statusCode);
    assert.ok(
      statuses.every((s) => s === 200 || s === 409),
      `200 or 409 only: ${answers.map((a) => `${a.statusCode} ${a.body}`).join('\n')}`,
    );
    const made = answers.filter((a) => a.statusCode === 200).map((a) => a.json().paymentId as string);
    assert.ok(made.length >= 1, 'one of them ran');
    assert.equal(new Set(made).size, 1, 'every 200 names the same refund');
    for (const busy of answers.filter((a) => a.statusCode === 409)) {
      assert.equal(busy.json().success, false);
      assert.equal(busy.json().error.code, 'IDEMPOTENCY_KEY_IN_USE');
      assert.equal(busy.json().error.retryAfter, 1);
    }
    const [refundId] = made;

    // Asked again once it is done: the same answer, and still one refund of exactly 0.1.
    const again = await refund(body);
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().paymentId, refundId);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const refunds = await refundsOfPayment();
    assert.equal(refunds.refundable, 0.4);
    assert.deepEqual(
      refunds.payments.map((p) => p.paymentId),
      [refundId],
    );
  });

  it('refuses the same key with another amount (422 naming idempotencyKey), and moves nothing', async () => {
    const other = await refund({ amount: 0.2, idempotencyKey: 'dialog-1' });
    assert.equal(other.statusCode, 422, other.body);
    assert.equal(other.json().error.code, 'IDEMPOTENCY_KEY_REUSED');
    assert.ok('idempotencyKey' in other.json().error.details);
    assert.equal((await refundsOfPayment()).refundable, 0.4);
  });

  it('makes a second refund under a new key (a new opening of the dialog)', async () => {
    const second = await refund({ amount: 0.1, idempotencyKey: 'dialog-2' });
    assert.equal(second.statusCode, 200, second.body);
    const refunds = await refundsOfPayment();
    assert.equal(refunds.refundable, 0.3);
    assert.equal(refunds.payments.length, 2);
  });

  it('frees the key after a refusal: a bad amount is refused, then the same key refunds a good one', async () => {
    const tooMuch = await refund({ amount: 5, idempotencyKey: 'dialog-3' });
    assert.equal(tooMuch.statusCode, 400, tooMuch.body);
    assert.ok('amount' in tooMuch.json().error.details);
    const fixed = await refund({ amount: 0.05, idempotencyKey: 'dialog-3' });
    assert.equal(fixed.statusCode, 200, fixed.body);
    assert.equal((await refundsOfPayment()).refundable, 0.25);
  });
});
