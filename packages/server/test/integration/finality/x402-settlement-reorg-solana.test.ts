import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Address, createSolanaRpc, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { GatewayMetrics } from '../../../src/metrics/gateway-metrics.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { type Party, type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';
import { svmExactRequirements, svmPayload } from '../../support/x402-buyer.ts';

/** Deep enough that a confirmed settlement is far from finalized when its slots are dropped. */
const FINALIZED_DEPTH = 100;

/**
 * An x402 `exact` Solana payment settled by gate402's built-in facilitator (its fee payer co-signed the
 * buyer's transaction, stored before the first broadcast) whose slot the localnet drops: the
 * reconciler broadcasts the settlement's stored bytes again — the same signature, never re-signed — and
 * the payment keeps its id in the new slot; when those bytes can no longer pay (the buyer spent the
 * USDC on another payment meanwhile), the payment is `reverted`, with payment.reverted, and its proof
 * is refused from then on.
 */
describe('reorgs on the localnet: an x402 settlement of the built-in facilitator whose slot is dropped', () => {
  let f: PaymentFixture;
  let seller: Party;
  let reconciler: PaymentReconciler;
  let metrics: GatewayMetrics;
  let feePayer: string;

  async function reorgs(): Promise<Record<string, number>> {
    const series = await metrics.registry.getSingleMetric('gate402_payment_reorgs_total')?.get();
    return Object.fromEntries(
      (series?.values ?? []).filter((v) => v.value > 0).map((v) => [`${v.labels.outcome}`, v.value]),
    );
  }

  before(async () => {
    f = await startPaymentFixture({
      chain: { testHooks: true, slotMs: 20, finalizedDepth: FINALIZED_DEPTH },
    });
    await f.gw.services.facilitator.start();
    seller = await f.party(0, 'premium');
    // The seller's USDC account exists (an `exact` payment does not create it).
    const funded = await f.post(seller.key, '/faucet', {
      address: seller.wallet,
      amount: 0.01,
      token: 'USDC',
    });
    assert.equal(funded.statusCode, 200, funded.body);
    feePayer = f.gw.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '';
    metrics = new GatewayMetrics();
    reconciler = new PaymentReconciler({
      store: f.gw.store,
      networks: f.gw.networks,
      ledger: f.gw.services.ledger,
      wallets: f.gw.services.wallets,
      instanceId: 'x402-solana-reorg-worker',
      recheckMs: 0,
      finality: metrics,
    });
  });
  after(() => f.close());

  const usdcOf = async (owner: string): Promise<bigint> => {
    const rpc = createSolanaRpc(f.chain.localnet.rpcUrl);
    const accounts = await rpc
      .getTokenAccountsByOwner(
        owner as Address,
        { mint: f.chain.localnet.usdcMint.address as Address },
        { commitment: 'confirmed', encoding: 'jsonParsed' },
      )
      .send();
    return accounts.value.reduce(
      (sum, a) =>
        sum +
        BigInt(
          (a.account.data as { parsed: { info: { tokenAmount: { amount: string } } } }).parsed.info
            .tokenAmount.amount,
        ),
      0n,
    );
  };
  const stored = async (id: string) => {
    const payment = await f.gw.store.payments.get(id);
    assert.ok(payment, id);
    return payment;
  };
  async function until(what: string, condition: () => Promise<boolean>, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  function dropFrom(slot: bigint): void {
    const localnet = f.chain.localnet;
    const dropped = localnet.dropSlots(localnet.slot - Number(slot));
    assert.equal(dropped[0], Number(slot));
  }
  async function typesOf(paymentId: string) {
    return (await f.gw.store.events.listAfter(seller.accountId, 0, 1000))
      .filter((e) => e.paymentId === paymentId)
      .map((e) => e.type);
  }

  /** A buyer holding exactly 0.02 USDC pays it to the seller: /payment/receive settles it. */
  async function paid(): Promise<{
    buyer: KeyPairSigner;
    proof: string;
    paymentId: string;
    signature: string;
  }> {
    const buyer = await generateKeyPairSigner();
    const funded = await f.post(seller.key, '/faucet', {
      address: buyer.address,
      amount: 0.02,
      token: 'USDC',
    });
    assert.equal(funded.statusCode, 200, funded.body);
    const requirements = svmExactRequirements(f.chain, { amount: '20000', payTo: seller.wallet, feePayer });
    const proof = encodePaymentSignatureHeader(await svmPayload(f.chain, buyer, requirements));
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
    assert.equal(settlement?.transactionId, r.signature, 'the facilitator kept the settlement');
    await until('the settlement confirmed', async () => {
      const outcome = await f.chain.adapter.getSignatureStatus(r.signature);
      return outcome?.status === 'confirmed';
    });
    return { buyer, proof, paymentId: r.paymentId, signature: r.signature };
  }

  it('the stored settlement bytes are broadcast again (same signature) and land in a new slot; same payment id, paid once, then finalized', async () => {
    const { paymentId, signature } = await paid();
    const before = await stored(paymentId);
    assert.ok(before.slot !== null);
    const sellerUsdc = await usdcOf(seller.wallet);
    const { signedTransaction } = (await f.gw.store.settlements.findByPayment(paymentId)) ?? {};

    dropFrom(before.slot);
    assert.equal(await f.chain.adapter.getSignatureStatus(signature), undefined, 'gone from the chain');
    assert.equal(await usdcOf(seller.wallet), sellerUsdc - 20000n);

    await reconciler.runOnce(); // resends the settlement's bytes
    await until('the same transaction to land again', async () => {
      const outcome = await f.chain.adapter.getSignatureStatus(signature);
      return outcome?.status === 'confirmed' || outcome?.status === 'finalized';
    });
    await reconciler.runOnce(); // the payment sees it in its new slot
    const landed = await f.chain.adapter.getSignatureStatus(signature);
    assert.ok(landed && landed.status !== 'failed' && 'slot' in landed);
    assert.ok(landed.slot > before.slot, 'a new slot');
    const moved = await stored(paymentId);
    // Confirmed in its new slot, or already finalized there if the machine was slow meanwhile.
    assert.ok(['confirmed', 'finalized'].includes(moved.status), moved.status);
    assert.equal(moved.signature, signature, 'the same transaction: the same signed bytes');
    assert.equal(moved.slot, landed.slot);
    assert.equal(moved.error, null);
    const kept = await f.gw.store.settlements.findByPayment(paymentId);
    assert.equal(kept?.signedTransaction, signedTransaction, 'never re-signed');
    assert.equal(await usdcOf(seller.wallet), sellerUsdc, 'paid once');

    await until(
      'finality past the new slot',
      async () => (await f.chain.adapter.finalizedSlot()) >= landed.slot,
    );
    await reconciler.runOnce();
    assert.equal((await stored(paymentId)).status, 'finalized');
    assert.deepEqual(await typesOf(paymentId), ['payment.received', 'payment.finalized']);
    assert.deepEqual(await reorgs(), { reorged: 1, resent: 1 });
  });

  it('bytes that can no longer pay (the buyer spent the USDC on another payment meanwhile): reverted, payment.reverted, and a later receive of the proof is refused', async () => {
    const { buyer, proof, paymentId, signature } = await paid();
    const before = await stored(paymentId);
    assert.ok(before.slot !== null);
    const sellerUsdc = await usdcOf(seller.wallet);

    dropFrom(before.slot);
    assert.equal(await f.chain.adapter.getSignatureStatus(signature), undefined);
    // Before the gateway resends, the buyer pays the same 0.02 USDC to someone else.
    const elsewhere = await f.party(0, 'premium');
    await f.post(elsewhere.key, '/faucet', { address: elsewhere.wallet, amount: 0.01, token: 'USDC' });
    const other = svmExactRequirements(f.chain, { amount: '20000', payTo: elsewhere.wallet, feePayer });
    const spent = await f.post(elsewhere.key, '/payment/receive', {
      walletAddress: elsewhere.wallet,
      paymentProof: encodePaymentSignatureHeader(await svmPayload(f.chain, buyer, other)),
      expectedAmount: 0.02,
      asset: 'USDC',
    });
    assert.equal(spent.statusCode, 200, spent.body);
    assert.equal(await usdcOf(buyer.address), 0n);

    // Resent bytes fail (or are refused) for want of funds; once they can no longer land: reverted.
    await until(
      'the payment reverted',
      async () => {
        await reconciler.runOnce();
        return (await stored(paymentId)).status === 'reverted';
      },
      30_000,
    );
    const p = await stored(paymentId);
    assert.equal(p.status, 'reverted');
    assert.equal(await usdcOf(seller.wallet), sellerUsdc - 20000n, 'the seller was not paid');
    const status = (await f.get(seller.key, `/payment/status/${paymentId}`)).json();
    assert.equal(status.status, 'reverted');
    assert.deepEqual(await typesOf(paymentId), ['payment.received', 'payment.reverted']);
    const history = (await f.get(seller.key, `/payment/history/${seller.wallet}`)).json();
    assert.equal(
      history.payments.find((h: { paymentId: string }) => h.paymentId === paymentId)?.status,
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
    const after = (await f.get(seller.key, `/payment/history/${seller.wallet}`)).json();
    assert.equal(after.total, history.total, 'nothing recorded');
  });
});
