import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Party, type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';

/**
 * GET /account/summary, the dashboard home's figures, from payments made on the embedded localnet as
 * callers make them: a buyer pays a seller three times for two resources, the seller receives each
 * proof. Each side sees its own flow only; a stranger sees nothing of either.
 */
describe('account summary: volume, totals and top resources from real payments', () => {
  let f: PaymentFixture;
  let buyer: Party;
  let seller: Party;
  const A = 'https://api.example.com/a';
  const B = 'https://api.example.com/b';

  before(async () => {
    f = await startPaymentFixture();
    buyer = await f.party(2);
    seller = await f.party();
    for (const [amount, resource] of [
      [0.1, A],
      [0.25, B],
      [0.05, A],
    ] as const) {
      const sent = await f.post(buyer.key, '/payment/send', {
        walletAddress: buyer.wallet,
        recipientAddress: seller.wallet,
        amount,
        resource,
      });
      assert.equal(sent.statusCode, 200, sent.body);
      const received = await f.post(seller.key, '/payment/receive', {
        walletAddress: seller.wallet,
        paymentProof: sent.json().paymentProof,
        expectedAmount: amount,
        resource,
      });
      assert.equal(received.statusCode, 200, received.body);
    }
  });
  after(() => f?.close());

  it("adds up the seller's received payments exactly, per day and asset, and ranks its resources", async () => {
    const res = await f.get(seller.key, '/account/summary');
    assert.equal(res.statusCode, 200, res.body);
    const s = res.json();
    assert.equal(s.days, 30);
    assert.ok(s.from <= Date.now() && s.to >= s.from);
    const flow = (amount: string, atomic: string, count: number) => ({ amount, atomic, count });
    const sol = { network: f.chain.adapter.info.id, asset: null, symbol: 'SOL', decimals: 9 };
    assert.deepEqual(s.assets, [
      { ...sol, received: flow('0.4', '400000000', 3), sent: flow('0', '0', 0), refunded: flow('0', '0', 0) },
    ]);
    assert.deepEqual(s.daily, [
      {
        date: new Date().toISOString().slice(0, 10),
        ...sol,
        received: flow('0.4', '400000000', 3),
        sent: flow('0', '0', 0),
        refunded: flow('0', '0', 0),
      },
    ]);
    assert.deepEqual(s.topResources, [
      { resource: B, ...sol, amount: '0.25', atomic: '250000000', count: 1, refunded: '0' },
      { resource: A, ...sol, amount: '0.15', atomic: '150000000', count: 2, refunded: '0' },
    ]);
  });

  it("shows the buyer its sends, and a stranger none of either's", async () => {
    const buyerView = (await f.get(buyer.key, '/account/summary?days=1')).json();
    assert.equal(buyerView.days, 1);
    assert.equal(buyerView.assets.length, 1);
    assert.equal(buyerView.assets[0].sent.amount, '0.4');
    assert.equal(buyerView.assets[0].sent.count, 3);
    assert.equal(buyerView.assets[0].received.count, 0);
    assert.deepEqual(buyerView.topResources, [], 'resources rank what was received, not what was bought');

    const stranger = await f.gw.newCaller();
    const strangerView = (await f.get(stranger.key, '/account/summary')).json();
    assert.deepEqual([strangerView.assets, strangerView.daily, strangerView.topResources], [[], [], []]);
  });

  it('refuses a window it cannot answer, naming `days`', async () => {
    for (const days of ['0', '91', 'abc', '1.5']) {
      const res = await f.get(seller.key, `/account/summary?days=${days}`);
      assert.equal(res.statusCode, 400, `days=${days}: ${res.body}`);
      assert.equal(res.json().error.code, 'INVALID_PARAMETERS');
      assert.ok('days' in res.json().error.details, res.body);
    }
    const unknown = await f.get(seller.key, '/account/summary?account=acct_other');
    assert.equal(unknown.statusCode, 400, unknown.body);
  });
});
