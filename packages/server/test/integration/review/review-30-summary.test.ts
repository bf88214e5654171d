import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../../src/domain/ids.ts';
import { newPayment } from '../../../src/services/payments/new-payment.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/** Review of #30: GET /account/summary after a refund. */
describe('review-30: the account summary after refunds', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.close());

  it('a payment refunded in full earns its resource nothing, and the refund is no spending', async () => {
    const { key, accountId } = await gw.newCaller('premium');
    const at = Date.now();
    const asset = { address: 'So1aNaUsdcMint1111111111111111111111111111', decimals: 6 };
    const sale = newPayment(at, {
      id: newId('pay'),
      accountId,
      direction: 'received',
      mode: 'facilitator',
      status: 'confirmed',
      network: 'solana:devnet',
      walletAddress: 'SeLLer1111111111111111111111111111111111111',
      sender: 'Buyer11111111111111111111111111111111111111',
      recipient: 'SeLLer1111111111111111111111111111111111111',
      amount: 2_000_000n,
      asset,
      resource: 'https://shop.example/report',
      confirmedAt: at,
    });
    await gw.services.ledger.record(sale);
    const refund = newPayment(at + 1, {
      id: newId('pay'),
      accountId,
      direction: 'sent',
      mode: 'custodial',
      status: 'confirmed',
      network: 'solana:devnet',
      walletAddress: sale.walletAddress,
      sender: sale.walletAddress,
      recipient: sale.sender,
      amount: 2_000_000n,
      asset,
      refundOf: sale.id,
      confirmedAt: at + 1,
    });
    await gw.services.ledger.record(refund);
    const summary = await callAs(gw, key, 'GET', '/account/summary?days=1');
    assert.equal(summary.status, 200, JSON.stringify(summary.body));
    const top = summary.body.topResources.find(
      (r: { resource: string }) => r.resource === 'https://shop.example/report',
    );
    assert.equal(top?.atomic ?? '0', '0', 'a sale refunded in full is counted as earned');
    assert.equal(top?.refunded, '2', 'what was refunded of the sales is shown beside them');
    const totals = summary.body.assets[0];
    assert.equal(totals?.sent.atomic ?? '0', '0', 'the refund is counted as spending');
    assert.deepEqual(totals?.refunded, { amount: '2', atomic: '2000000', count: 1 });
    assert.equal(totals?.received.atomic, '2000000', 'received stays what came in');
  });
});
