import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Address, createSolanaRpc } from '@solana/kit';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import { GatewayMetrics } from '../../../src/metrics/gateway-metrics.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { signAndBroadcast } from '../../support/local-signer.ts';
import {
  LAMPORTS,
  type Party,
  type PaymentFixture,
  startPaymentFixture,
} from '../../support/payment-fixture.ts';

/** Deep enough that a confirmed payment is far from finalized when its slots are dropped. */
const FINALIZED_DEPTH = 100;

/**
 * Real reorganisations on the localnet: the slots from a confirmed payment's on are dropped (the test
 * hook `dropSlots`: blocks, transactions and their effects leave the chain), and the gateway's
 * reconciler must either land the same signed bytes again or say `reverted` — never leave a payment
 * confirmed or finalized whose transaction is not in the chain.
 */
describe('reorgs on the localnet: a confirmed payment whose slot is dropped', () => {
  let f: PaymentFixture;
  let buyer: Party;
  let seller: Party;
  let reconciler: PaymentReconciler;
  let metrics: GatewayMetrics;
  let network: string;

  async function reorgs(): Promise<Record<string, number>> {
    const series = await metrics.registry.getSingleMetric('gate402_payment_reorgs_total')?.get();
    return Object.fromEntries(
      (series?.values ?? [])
        .filter((v) => v.labels.network === network && v.value > 0)
        .map((v) => [String(v.labels.outcome), v.value]),
    );
  }

  before(async () => {
    f = await startPaymentFixture({
      chain: { testHooks: true, slotMs: 20, finalizedDepth: FINALIZED_DEPTH },
    });
    network = f.chain.localnet.network;
    buyer = await f.party(2, 'premium');
    seller = await f.party(0, 'premium');
    metrics = new GatewayMetrics();
    reconciler = new PaymentReconciler({
      store: f.gw.store,
      networks: f.gw.networks,
      ledger: f.gw.services.ledger,
      wallets: f.gw.services.wallets,
      instanceId: 'solana-reorg-worker',
      recheckMs: 0,
      finality: metrics,
    });
  });
  after(() => f.close());

  const rpc = () => createSolanaRpc(f.chain.localnet.rpcUrl);
  const confirmedBalance = async (address: string) =>
    (
      await rpc()
        .getBalance(address as Address, { commitment: 'confirmed' })
        .send()
    ).value;
  const stored = async (id: string) => {
    const payment = await f.gw.store.payments.get(id);
    assert.ok(payment, id);
    return payment;
  };
  /** Waits (bounded) for a condition of the chain; throws when it does not come. */
  async function until(what: string, condition: () => Promise<boolean>, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  /** Drops the slots from `slot` to the newest (synchronous: the slot clock cannot move in between). */
  function dropFrom(slot: bigint): number[] {
    const localnet = f.chain.localnet;
    const dropped = localnet.dropSlots(localnet.slot - Number(slot));
    assert.equal(dropped[0], Number(slot));
    return dropped;
  }
  async function typesOf(accountId: string, paymentId: string) {
    return (await f.gw.store.events.listAfter(accountId, 0, 1000))
      .filter((e) => e.paymentId === paymentId)
      .map((e) => e.type);
  }

  it('a custodial send: the same signed bytes are broadcast again and land in a new slot; same id, paid once, then finalized', async () => {
    const sent = await f.post(buyer.key, '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 0.25,
    });
    assert.equal(sent.statusCode, 200, sent.body);
    const s = sent.json();
    assert.equal(s.status, 'confirmed');
    const received = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: s.paymentProof,
      expectedAmount: 0.25,
    });
    assert.equal(received.statusCode, 200, received.body);
    const r = received.json();
    const first = await stored(s.paymentId);
    assert.ok(first.slot !== null);
    await until('the payment confirmed on chain', async () => (await confirmedBalance(seller.wallet)) > 0n);
    const paid = await confirmedBalance(seller.wallet);

    dropFrom(first.slot);
    assert.equal(await f.chain.adapter.getSignatureStatus(s.signature), undefined, 'gone from the chain');
    assert.equal(await confirmedBalance(seller.wallet), paid - LAMPORTS / 4n);

    await reconciler.runOnce(); // resends the stored bytes
    await until('the same transaction to land again', async () => {
      const outcome = await f.chain.adapter.getSignatureStatus(s.signature);
      return outcome?.status === 'confirmed' || outcome?.status === 'finalized';
    });
    await reconciler.runOnce(); // both records see it in its new slot
    const landed = await f.chain.adapter.getSignatureStatus(s.signature);
    assert.ok(landed && landed.status !== 'failed' && 'slot' in landed);
    assert.ok(landed.slot > first.slot, 'a new slot');
    for (const id of [s.paymentId, r.paymentId]) {
      const p = await stored(id);
      assert.equal(p.status, 'confirmed', id);
      assert.equal(p.signature, s.signature);
      assert.equal(p.slot, landed.slot, `${id} has the new slot`);
      assert.equal(p.error, null);
    }
    assert.equal((await stored(s.paymentId)).signedTransaction, first.signedTransaction, 'never re-signed');
    assert.equal(await confirmedBalance(seller.wallet), paid, 'paid once');

    await until(
      'finality past the new slot',
      async () => (await f.chain.adapter.finalizedSlot()) >= landed.slot,
    );
    await reconciler.runOnce();
    assert.equal((await stored(s.paymentId)).status, 'finalized');
    assert.equal((await stored(r.paymentId)).status, 'finalized');
    assert.ok(!(await typesOf(buyer.accountId, s.paymentId)).includes('payment.reverted'));
    assert.deepEqual(await reorgs(), { reorged: 1, resent: 1 });
  });

  it('a local-mode send its caller does not resend: confirmed until finality passes its slot, then reverted with payment.reverted; its proof is refused', async () => {
    const payer = generateSolanaKeypair();
    f.chain.localnet.airdrop(payer.address, LAMPORTS);
    await until('the payer funded', async () => (await confirmedBalance(payer.address)) > 0n);
    const built = await f.post(buyer.key, '/transaction/send', {
      walletAddress: payer.address,
      recipientAddress: seller.wallet,
      amount: 0.1,
    });
    assert.equal(built.statusCode, 200, built.body);
    const b = built.json();
    const signature = await signAndBroadcast(f.chain.localnet.rpcUrl, b.transaction, payer.secretKey);
    await until('the send confirmed', async () => {
      const outcome = await f.chain.adapter.getSignatureStatus(signature);
      return outcome?.status === 'confirmed';
    });
    await reconciler.runOnce();
    const confirmed = await stored(b.paymentId);
    assert.equal(confirmed.status, 'confirmed');
    assert.ok(confirmed.slot !== null);
    const received = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: b.paymentProof,
      expectedAmount: 0.1,
    });
    assert.equal(received.statusCode, 200, received.body);
    const r = received.json();
    assert.equal(r.status, 'confirmed');

    dropFrom(confirmed.slot);
    assert.equal(await f.chain.adapter.getSignatureStatus(signature), undefined);
    // Not found, but the chain has not finalized past its slot: nothing is proven, nothing moves.
    await reconciler.runOnce();
    assert.equal((await stored(b.paymentId)).status, 'confirmed');
    assert.equal((await stored(r.paymentId)).status, 'confirmed');

    await until(
      'finality past the dropped slot',
      async () => (await f.chain.adapter.finalizedSlot()) >= (confirmed.slot as bigint),
    );
    await reconciler.runOnce(); // the send reverts; the receipt waits for it
    await reconciler.runOnce(); // the receipt follows
    assert.equal(
      await f.chain.adapter.getSignatureStatus(signature),
      undefined,
      'the gateway never broadcasts what the caller signed',
    );
    for (const [key, id] of [
      [buyer.key, b.paymentId],
      [seller.key, r.paymentId],
    ] as const) {
      const status = (await f.get(key, `/payment/status/${id}`)).json();
      assert.equal(status.status, 'reverted', id);
    }
    assert.deepEqual(await typesOf(buyer.accountId, b.paymentId), ['payment.confirmed', 'payment.reverted']);
    assert.deepEqual(await typesOf(seller.accountId, r.paymentId), ['payment.received', 'payment.reverted']);

    // The proof backs nothing now: another receive of it is refused as reverted, not as unseen.
    const again = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: b.paymentProof,
      expectedAmount: 0.1,
    });
    assert.equal(again.statusCode, 422, again.body);
    assert.equal(again.json().error.code, 'PAYMENT_VERIFICATION_FAILED');
    assert.equal(again.json().error.details.paymentProof, 'reverted');
    assert.deepEqual(await reorgs(), { reorged: 3, resent: 1, reverted: 2 });
  });
});
