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

  it('a payment that is only confirmed (one EVM block, which docs/finality.md says a routine reorg can take back) is not refunded before it is final', {
    todo: 'review-30: RefundService.refund (refund-service.ts refundable()) sends the refund for a payment that is merely confirmed; if a reorg then takes the original off the chain (the buyer double-spends it), the original becomes reverted while the refund stands — the seller paid back money it never kept. Refund only finalized payments (or hold the refund until the original is finalized)',
  }, async () => {
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
    const refund = await f.post(seller.key, `/payment/refund/${paymentId}`, {});
    assert.equal(
      refund.statusCode,
      409,
      `a refund of a payment a reorg can still undo was made: ${refund.body}`,
    );
  });
});
