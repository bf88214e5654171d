import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { type Address, type Hex, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { GatewayMetrics } from '../../../src/metrics/gateway-metrics.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import {
  ETH,
  type EvmParty,
  type EvmPaymentFixture,
  startEvmPaymentFixture,
} from '../../support/evm-payment-fixture.ts';
import {
  evmExactRequirements,
  evmPayload,
  spendNonceOnAnotherAuthorization,
} from '../../support/x402-buyer.ts';

const NETWORK = 'eip155:31337';
/** anvil (no block time) calls a block finalized 64 blocks deep. */
const PAST_FINALITY = 70;
const BALANCE_OF = parseAbi(['function balanceOf(address) view returns (uint256)']);

interface Authorization {
  readonly from: Address;
  readonly validAfter: string;
  readonly validBefore: string;
  readonly nonce: Hex;
}

/**
 * An x402 `exact` EVM payment settled by gate402's built-in facilitator (its fee payer signed the
 * transferWithAuthorization transaction, stored before the first broadcast) whose block anvil_rollback
 * takes out of the chain: the reconciler broadcasts the settlement's stored bytes again — the same
 * transaction hash, never re-signed — and the payment keeps its id in the new block; when those bytes
 * can no longer pay (the buyer spent the authorization's nonce meanwhile), the payment is `reverted`,
 * with payment.reverted, and the proof is refused from then on.
 */
describe('reorgs on anvil: an x402 settlement of the built-in facilitator whose block leaves the chain', () => {
  let f: EvmPaymentFixture;
  let seller: EvmParty;
  let reconciler: PaymentReconciler;
  let metrics: GatewayMetrics;

  async function reorgs(): Promise<Record<string, number>> {
    const series = await metrics.registry.getSingleMetric('gate402_payment_reorgs_total')?.get();
    return Object.fromEntries(
      (series?.values ?? [])
        .filter((v) => v.labels.network === NETWORK && v.value > 0)
        .map((v) => [String(v.labels.outcome), v.value]),
    );
  }

  before(async () => {
    f = await startEvmPaymentFixture();
    await f.gw.services.facilitator.start();
    seller = await f.party(0n, 'premium');
    metrics = new GatewayMetrics();
    reconciler = new PaymentReconciler({
      store: f.gw.store,
      networks: f.gw.networks,
      ledger: f.gw.services.ledger,
      wallets: f.gw.services.wallets,
      instanceId: 'x402-reorg-worker',
      recheckMs: 0,
      finality: metrics,
    });
  });
  after(async () => {
    await f.close();
  });

  const rollback = (blocks: number) =>
    f.anvil.request({ method: 'anvil_rollback', params: [blocks] } as never as {
      method: 'anvil_mine';
      params: [Hex, Hex];
    });
  const stored = async (id: string) => {
    const payment = await f.gw.store.payments.get(id);
    assert.ok(payment, id);
    return payment;
  };
  const receiptOf = (hash: string) =>
    f.anvil.getTransactionReceipt({ hash: hash as Hex }).then(
      (r) => r,
      () => undefined,
    );
  const usdcOf = (owner: string) =>
    f.anvil.readContract({
      address: f.evm.usdc.address as Address,
      abi: BALANCE_OF,
      functionName: 'balanceOf',
      args: [owner as Address],
    });
  async function typesOf(paymentId: string) {
    return (await f.gw.store.events.listAfter(seller.accountId, 0, 1000))
      .filter((e) => e.paymentId === paymentId)
      .map((e) => e.type);
  }

  /** A buyer with USDC pays the seller 0.02 USDC: /payment/receive settles it with the built-in facilitator. */
  async function paid() {
    const buyer = privateKeyToAccount(generatePrivateKey());
    const funded = await f.post(seller.key, '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    assert.equal(funded.statusCode, 200, funded.body);
    const payload = await evmPayload(
      buyer,
      evmExactRequirements(f.evm, { amount: '20000', payTo: seller.wallet }),
      'https://shop.example/report',
    );
    const proof = encodePaymentSignatureHeader(payload);
    const received = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: proof,
      expectedAmount: 0.02,
      asset: 'USDC',
    });
    assert.equal(received.statusCode, 200, received.body);
    const r = received.json() as { paymentId: string; status: string; signature: string };
    assert.equal(r.status, 'confirmed');
    const settlement = await f.gw.store.settlements.findByPayment(r.paymentId);
    assert.ok(settlement, 'the facilitator kept the settlement');
    assert.equal(settlement.transactionId, r.signature);
    const authorization = (payload.payload as { authorization: Authorization }).authorization;
    return { buyer, proof, r, settlement, authorization };
  }

  it('the stored settlement bytes are broadcast again (same hash) and land in a new block; same payment id, paid once, then finalized', async () => {
    const { r, settlement } = await paid();
    const before = await stored(r.paymentId);
    const sellerUsdc = await usdcOf(seller.wallet);

    await rollback(1);
    await f.anvil.mine({ blocks: 3 });
    assert.equal(await receiptOf(r.signature), undefined, 'the block and its settlement are gone');
    assert.equal(await usdcOf(seller.wallet), sellerUsdc - 20000n);

    await reconciler.runOnce(); // resends the settlement's bytes
    const landed = await f.anvil.waitForTransactionReceipt({
      hash: r.signature as Hex,
      pollingInterval: 20,
      timeout: 5_000,
    });
    assert.equal(landed.status, 'success');
    await reconciler.runOnce(); // the payment sees it in its new block
    assert.ok(landed.blockNumber > (before.slot ?? 0n));
    const moved = await stored(r.paymentId);
    assert.equal(moved.status, 'confirmed');
    assert.equal(moved.signature, r.signature, 'the same transaction: the same signed bytes');
    assert.equal(moved.slot, landed.blockNumber);
    assert.equal(moved.blockHeight, landed.blockNumber);
    assert.equal(moved.error, null);
    const kept = await f.gw.store.settlements.findByPayment(r.paymentId);
    assert.equal(kept?.signedTransaction, settlement.signedTransaction, 'never re-signed');
    assert.equal(kept?.transactionId, r.signature);
    assert.equal(await usdcOf(seller.wallet), sellerUsdc, 'paid once');
    const status = (await f.get(seller.key, `/payment/status/${r.paymentId}`)).json();
    assert.equal(status.blockHeight, Number(landed.blockNumber));

    await f.anvil.mine({ blocks: PAST_FINALITY });
    await reconciler.runOnce();
    assert.equal((await stored(r.paymentId)).status, 'finalized');
    assert.deepEqual(await typesOf(r.paymentId), ['payment.received', 'payment.finalized']);
    assert.deepEqual(await reorgs(), { reorged: 1, resent: 1 });
  });

  it('bytes that can no longer pay (the authorization nonce used by another transaction meanwhile): reverted, payment.reverted, and a later receive of the proof is refused', async () => {
    const { buyer, proof, r, authorization } = await paid();
    const sellerUsdc = await usdcOf(seller.wallet);

    await rollback(1);
    assert.equal(await receiptOf(r.signature), undefined);
    // The buyer spends the authorization's nonce on a transfer to itself before the gateway resends.
    const submitter = privateKeyToAccount(generatePrivateKey());
    await f.chain.faucet?.fundNative(submitter.address, ETH);
    await spendNonceOnAnotherAuthorization(f.evm, buyer, authorization, submitter);
    assert.equal(await usdcOf(seller.wallet), sellerUsdc - 20000n);

    await reconciler.runOnce(); // resends: the fee payer's nonce is unused, the transfer fails on-chain
    // The resent bytes are mined on their own time: wait for their receipt before the next look.
    const failed = await f.anvil.waitForTransactionReceipt({
      hash: r.signature as Hex,
      pollingInterval: 20,
      timeout: 5_000,
    });
    assert.equal(failed.status, 'reverted');
    await reconciler.runOnce(); // sees it failed: reverted
    const p = await stored(r.paymentId);
    assert.equal(p.status, 'reverted', p.error ?? '');
    assert.equal(await usdcOf(seller.wallet), sellerUsdc - 20000n, 'the seller was not paid');
    const status = (await f.get(seller.key, `/payment/status/${r.paymentId}`)).json();
    assert.equal(status.status, 'reverted');
    assert.deepEqual(await typesOf(r.paymentId), ['payment.received', 'payment.reverted']);
    const history = (await f.get(seller.key, `/payment/history/${seller.wallet}`)).json();
    assert.equal(
      history.payments.find((h: { paymentId: string }) => h.paymentId === r.paymentId)?.status,
      'reverted',
    );

    // The proof backs nothing now: a later receive of it is refused, and records nothing.
    const again = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: proof,
      expectedAmount: 0.02,
      asset: 'USDC',
    });
    assert.equal(again.statusCode, 422, again.body);
    assert.equal(again.json().error.code, 'PAYMENT_VERIFICATION_FAILED');
    assert.equal(again.json().error.details.paymentProof, 'reverted');
    const verified = await f.post(seller.key, '/v1/payments/verify', {
      payment_proof: proof,
      amount: 20000,
      asset: 'USDC',
      recipient: seller.wallet,
    });
    assert.equal(verified.json().verified, false);
    assert.equal((await typesOf(r.paymentId)).length, 2);
    assert.deepEqual(await reorgs(), { reorged: 2, resent: 2, reverted: 1 });
  });
});
