import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lastCharacterChanged } from '../support/last-character-changed.ts';
import { type Party, type PaymentFixture, startPaymentFixture } from '../support/payment-fixture.ts';

describe('POST /v1/payments/verify', () => {
  let f: PaymentFixture;
  let buyer: Party;
  let seller: Party;
  let paid: { paymentProof: string; signature: string };

  before(async () => {
    f = await startPaymentFixture();
    buyer = await f.party(5);
    seller = await f.party();
    const sent = await f.post(buyer.key, '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 0.1,
    });
    assert.equal(sent.statusCode, 200, sent.body);
    paid = sent.json();
  });
  after(() => f.close());

  const b64 = (text: string) => Buffer.from(text).toString('base64');
  const x402Payload = (accepted: Record<string, unknown>) => ({
    x402Version: 2,
    accepted: {
      scheme: 'exact',
      network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
      asset: seller.wallet,
      payTo: seller.wallet,
      amount: '1',
      ...accepted,
    },
    payload: { transaction: 'AQ==' },
  });
  const verify = (body: Record<string, unknown>) =>
    f.post(seller.key, '/v1/payments/verify', {
      payment_proof: b64(paid.paymentProof),
      amount: 100_000_000,
      recipient: seller.wallet,
      ...body,
    });

  it('says verified with the transaction id, as often as asked, and consumes nothing', async () => {
    for (const amount of [100_000_000, 1]) {
      const res = await verify({ amount, metadata: { contentId: 'article-7' } });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), {
        verified: true,
        transaction_id: paid.signature,
        network: f.chain.adapter.info.id,
        asset: { symbol: 'SOL', address: null, decimals: 9 },
      });
    }
    const redeemed = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: paid.paymentProof,
      expectedAmount: 0.1,
    });
    assert.equal(redeemed.statusCode, 200, 'verification did not use the proof up');
    const after = await verify({});
    assert.equal(after.json().verified, false);
    assert.equal(after.json().reason, 'already_used');
  });

  it('answers verified: false with a reason for payments that do not hold', async () => {
    const other = await f.party();
    const cases: [Record<string, unknown>, string][] = [
      [{ amount: 100_000_001 }, 'amount_too_low'],
      [{ recipient: other.wallet }, 'recipient_mismatch'],
      [{ payment_proof: b64('0x1234') }, 'malformed'],
      [{ payment_proof: b64('hello') }, 'malformed'],
      [{ payment_proof: b64(lastCharacterChanged(paid.paymentProof)) }, 'bad_signature'],
      // Shaped as an x402 v2 payload, but its requirements are not strings where x402's are.
      ...['scheme', 'network', 'asset', 'payTo', 'amount'].map((field): [Record<string, unknown>, string] => [
        { payment_proof: b64(JSON.stringify(x402Payload({ [field]: { toString: 1 } }))) },
        'malformed',
      ]),
    ];
    for (const [body, reason] of cases) {
      const res = await verify(body);
      assert.equal(res.statusCode, 200, JSON.stringify(body));
      assert.equal(res.json().verified, false, JSON.stringify(body));
      assert.equal(res.json().reason, reason, JSON.stringify(body));
      assert.equal(typeof res.json().message, 'string');
      assert.equal(res.json().transaction_id, undefined);
    }
  });

  it('answers 400 with details for bad input', async () => {
    const cases: [Record<string, unknown>, Record<string, string>][] = [
      [{ amount: 0.5 }, { amount: 'must be an integer' }],
      [{ amount: 0 }, { amount: 'must be between 1 and 1e+30' }],
      [{ amount: '100' }, { amount: 'must be an integer' }],
      [{ payment_proof: 'not base64!' }, { payment_proof: 'must be base64' }],
      [{ recipient: 'nobody' }, { recipient: 'must be a Solana (base58) or EVM (0x…) address' }],
      [{ paymentProof: 'camelCase' }, { paymentProof: 'is not a known field' }],
    ];
    for (const [body, details] of cases) {
      const res = await verify(body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().error.code, 'INVALID_PARAMETERS');
      assert.deepEqual(res.json().error.details, details, JSON.stringify(body));
    }
    const missing = await f.post(seller.key, '/v1/payments/verify', { amount: 1, recipient: seller.wallet });
    assert.equal(missing.statusCode, 400);
    assert.deepEqual(missing.json().error.details, { payment_proof: 'is required' });
  });
});
