import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Party, type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';

describe('receiving a payment this gateway sent and saw confirmed', () => {
  let f: PaymentFixture;
  let buyer: Party;
  let seller: Party;

  before(async () => {
    f = await startPaymentFixture();
    buyer = await f.party(5);
    seller = await f.party();
  });
  after(() => f.close());

  it('is verified from the gateway’s own record, so it needs no chain round trip — not even a chain', async () => {
    const sent = await f.post(buyer.key, '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 0.25,
    });
    assert.equal(sent.statusCode, 200, sent.body);
    assert.equal(sent.json().status, 'confirmed');
    const { paymentProof, signature } = sent.json();

    // The chain goes away: a proof of a payment this gateway recorded as confirmed still verifies.
    await f.chain.localnet.close();
    const tooMuch = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof,
      expectedAmount: 0.26,
    });
    assert.equal(tooMuch.statusCode, 422, tooMuch.body);
    assert.equal(tooMuch.json().error.details.paymentProof, 'amount_too_low');

    const received = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof,
      expectedAmount: 0.25,
    });
    assert.equal(received.statusCode, 200, received.body);
    assert.equal(received.json().signature, signature);
    assert.equal(received.json().amountReceived, 0.25);
    assert.equal(received.json().sender, buyer.wallet);

    const again = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof,
      expectedAmount: 0.25,
    });
    assert.equal(again.statusCode, 422, again.body);
    assert.equal(again.json().error.details.paymentProof, 'already_used');
  });
});
