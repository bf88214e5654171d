import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Party, type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';
import { openStream } from '../../support/stream-client.ts';
import { bearer } from '../../support/test-gateway.ts';

/** The stream fed by the real payment flows on a real localnet: send and receive through the API. */
describe('payment stream on a real chain', () => {
  let f: PaymentFixture;
  let buyer: Party;
  let seller: Party;
  let url: string;

  before(async () => {
    f = await startPaymentFixture({ gateway: { events: {} } });
    buyer = await f.party(5, 'premium');
    seller = await f.party(0, 'premium');
    const address = await f.gw.app.listen({ port: 0, host: '127.0.0.1' });
    url = `${address.replace('http', 'ws')}/v1/payments/stream`;
  });
  after(() => f.close());

  it('shows the buyer its send and the seller its receipt, each with the amount at the top level', async () => {
    const buyerStream = await openStream(url, { headers: bearer(buyer.key) });
    const sellerStream = await openStream(url, { headers: bearer(seller.key) });
    await Promise.all(
      [buyerStream, sellerStream].map((s) =>
        s.until((c) => c.messages.some((m) => m.type === 'authenticated')),
      ),
    );
    const sent = await f.post(buyer.key, '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 0.125,
    });
    assert.equal(sent.statusCode, 200, sent.body);
    const { paymentId, paymentProof } = sent.json();
    await buyerStream.until(
      (c) => c.events().some((e) => e.type === 'payment.confirmed'),
      20_000,
      'confirmed',
    );
    const buyerEvents = buyerStream.events();
    assert.deepEqual(
      buyerEvents.slice(0, 2).map((e) => [e.type, e.amount, (e.data as { paymentId: string }).paymentId]),
      [
        ['payment.sent', 0.125, paymentId],
        ['payment.confirmed', 0.125, paymentId],
      ],
    );
    const confirmed = buyerEvents[1]?.data as Record<string, unknown>;
    assert.equal(confirmed.status, 'confirmed');
    assert.equal(confirmed.sender, buyer.wallet);
    assert.equal(confirmed.recipient, seller.wallet);
    assert.equal(typeof confirmed.signature, 'string');

    const received = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof,
      expectedAmount: 0.125,
    });
    assert.equal(received.statusCode, 200, received.body);
    await sellerStream.until((c) => c.events().length > 0, 10_000, 'the receipt');
    const [receipt] = sellerStream.events();
    assert.ok(receipt !== undefined);
    assert.equal(receipt.type, 'payment.received');
    assert.equal(receipt.amount, 0.125);
    assert.equal((receipt.data as { paymentId: string }).paymentId, received.json().paymentId);
    assert.ok(
      !buyerStream
        .events()
        .some((e) => (e.data as { paymentId: string }).paymentId === received.json().paymentId),
      "the buyer never sees the seller's payment",
    );
    buyerStream.close();
    sellerStream.close();
  });
});
