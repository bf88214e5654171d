import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import { tempSqlite } from '../../support/databases.ts';
import { startEvmPaymentFixture } from '../../support/evm-payment-fixture.ts';
import { type FamilyPaymentFixture, onEvm } from '../../support/family-fixtures.ts';
import type { Party } from '../../support/party.ts';

const USDC = 1_000_000n;

/**
 * Review of #30 (adversarial): refunds on the embedded anvil, as a hostile buyer would use them.
 */
describe('review-30: refunds as a hostile buyer (anvil, SQLite)', { timeout: 300_000 }, () => {
  let f: FamilyPaymentFixture;
  let close: () => Promise<void>;
  let chain: ChainAdapter;
  let buyer: Party;
  let cent: bigint;

  before(async () => {
    const raw = await startEvmPaymentFixture({ gateway: { storage: await tempSqlite() } });
    f = onEvm(raw);
    close = () => raw.close();
    const adapter = f.gw.networks.get(f.network);
    assert.ok(adapter !== undefined);
    chain = adapter;
    cent = 10n ** BigInt(f.native.decimals - 2);
    buyer = await f.party(100n * cent, 'premium');
    await chain.faucet?.fundToken('USDC', buyer.wallet, 1_000n * USDC);
  });
  after(() => close());

  it('a payment that is only confirmed (one EVM block, which docs/finality.md says a routine reorg can take back) is not refunded before it is final: the refund is held, nothing is sent', async () => {
    const seller = await f.party(100n * cent, 'premium');
    const sent = await f.post(buyer.key, '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 1,
      asset: 'USDC',
    });
    assert.equal(sent.statusCode, 200, sent.body);
    const received = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: sent.json().paymentProof,
      expectedAmount: 1,
      asset: 'USDC',
    });
    assert.equal(received.statusCode, 200, received.body);
    const paymentId = received.json().paymentId as string;
    const original = await f.gw.store.payments.get(paymentId);
    assert.equal(original?.status, 'confirmed', 'the original is not final yet');
    const usdc = sent.json().asset.address as string;
    const before = await chain.getTokenBalance(buyer.wallet, usdc);
    const refund = await f.post(seller.key, `/payment/refund/${paymentId}`, {});
    // Accepted and counted, but held: no transaction until the payment is finalized (held-refunds.test.ts
    // follows it to the end: sent once final, cancelled if the payment is reorged away).
    assert.equal(refund.statusCode, 200, refund.body);
    assert.equal(refund.json().status, 'pending');
    assert.equal(refund.json().heldUntil, 'refunded_payment_finalized');
    const held = await f.gw.store.payments.get(refund.json().paymentId);
    assert.deepEqual([held?.signature, held?.signedTransaction], [null, null], 'nothing signed');
    assert.equal(await chain.getTokenBalance(buyer.wallet, usdc), before, 'nothing sent');
  });
});
