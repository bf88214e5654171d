import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Hex } from 'viem';
import { GatewayMetrics } from '../../../src/metrics/gateway-metrics.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { newEvmLocalWallet, signAndBroadcastEvm } from '../../support/evm-local-signer.ts';
import {
  ETH,
  type EvmParty,
  type EvmPaymentFixture,
  startEvmPaymentFixture,
} from '../../support/evm-payment-fixture.ts';
import { openStream, type StreamClient } from '../../support/stream-client.ts';
import { bearer } from '../../support/test-gateway.ts';
import { WebhookReceiver } from '../../support/webhook-receiver.ts';

const NETWORK = 'eip155:31337';
/** anvil (no block time) calls a block finalized 64 blocks deep. */
const PAST_FINALITY = 70;

/**
 * Real reorganisations on anvil: the block of a confirmed payment is taken out of the chain
 * (anvil_rollback drops the block and its transactions; nothing puts them back in the pool), and the
 * gateway's reconciler, on its next passes, must either land the same signed bytes again or say
 * `reverted` — never leave a payment confirmed or finalized whose transaction is not in the chain.
 */
describe('reorgs on anvil: a confirmed payment whose block leaves the chain', () => {
  let f: EvmPaymentFixture;
  let buyer: EvmParty;
  let seller: EvmParty;
  let reconciler: PaymentReconciler;
  let sellerStream: StreamClient;
  const sellerHooks = new WebhookReceiver();
  let metrics: GatewayMetrics;
  /** gate402_payment_reorgs_total by outcome on the anvil network; outcomes never counted left out. */
  async function reorgs(): Promise<Record<string, number>> {
    const series = await metrics.registry.getSingleMetric('gate402_payment_reorgs_total')?.get();
    return Object.fromEntries(
      (series?.values ?? [])
        .filter((v) => v.labels.network === NETWORK && v.value > 0)
        .map((v) => [String(v.labels.outcome), v.value]),
    );
  }

  before(async () => {
    f = await startEvmPaymentFixture({
      gateway: {
        allowPrivateOutboundUrls: true,
        events: { config: { allowPrivateOutboundUrls: true, webhookRetryBaseMs: 50, eventsPollMs: 50 } },
      },
    });
    buyer = await f.party(10n * ETH, 'premium');
    seller = await f.party(0n, 'premium');
    metrics = new GatewayMetrics();
    reconciler = new PaymentReconciler({
      store: f.gw.store,
      networks: f.gw.networks,
      ledger: f.gw.services.ledger,
      wallets: f.gw.services.wallets,
      instanceId: 'reorg-worker',
      recheckMs: 0,
      finality: metrics,
    });
    const address = await f.gw.app.listen({ port: 0, host: '127.0.0.1' });
    sellerStream = await openStream(`${address.replace('http', 'ws')}/v1/payments/stream`, {
      headers: bearer(seller.key),
    });
    await sellerStream.until((c) => c.messages.some((m) => m.type === 'authenticated'));
    // The seller's webhook asks for payment.reverted alone: the new type is one an endpoint can name.
    const hook = await f.post(seller.key, '/webhooks', {
      url: await sellerHooks.start(),
      eventTypes: ['payment.reverted'],
    });
    assert.equal(hook.statusCode, 200, hook.body);
    sellerHooks.secret = hook.json().secret;
  });
  after(async () => {
    sellerStream.close();
    await sellerHooks.close();
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
  async function typesOf(accountId: string, paymentId: string) {
    return (await f.gw.store.events.listAfter(accountId, 0, 1000))
      .filter((e) => e.paymentId === paymentId)
      .map((e) => e.type);
  }

  it('a custodial send: the same signed bytes are broadcast again and land in a new block; same id, paid once, then finalized', async () => {
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
    const before = await stored(s.paymentId);
    const paid = await f.chain.getBalance(seller.wallet);

    await rollback(1);
    await f.anvil.mine({ blocks: 3 });
    assert.equal(await receiptOf(s.signature), undefined, 'the block and its transaction are gone');
    assert.equal(await f.chain.getBalance(seller.wallet), paid - ETH / 4n);

    await reconciler.runOnce(); // resends
    // The same transaction (same hash: the same signed bytes) is in the chain again once anvil mined it.
    const landed = await f.anvil.waitForTransactionReceipt({
      hash: s.signature as Hex,
      pollingInterval: 20,
      timeout: 5_000,
    });
    await reconciler.runOnce(); // both records see it in its new block
    assert.ok(landed.blockNumber > (before.slot ?? 0n));
    for (const id of [s.paymentId, r.paymentId]) {
      const p = await stored(id);
      assert.equal(p.status, 'confirmed');
      assert.equal(p.signature, s.signature);
      assert.equal(p.slot, landed.blockNumber, `${id} has the new block`);
      assert.equal(p.blockHeight, landed.blockNumber);
      assert.equal(p.error, null);
    }
    const after = await stored(s.paymentId);
    assert.equal(after.signedTransaction, before.signedTransaction, 'never re-signed');
    assert.equal(await f.chain.getBalance(seller.wallet), paid, 'paid once');
    const status = (await f.get(seller.key, `/payment/status/${r.paymentId}`)).json();
    assert.equal(status.blockHeight, Number(landed.blockNumber));

    await f.anvil.mine({ blocks: PAST_FINALITY });
    await reconciler.runOnce();
    assert.equal((await stored(s.paymentId)).status, 'finalized');
    assert.equal((await stored(r.paymentId)).status, 'finalized');
    assert.ok(!(await typesOf(buyer.accountId, s.paymentId)).includes('payment.reverted'));
    assert.deepEqual(await reorgs(), { reorged: 1, resent: 1 });
  });

  it('a local-mode send its caller does not resend: confirmed until finality passes its block, then reverted, with payment.reverted in the outbox, on the stream and by webhook; its proof is refused', async () => {
    const payer = newEvmLocalWallet();
    await f.chain.faucet?.fundNative(payer.address, ETH);
    const built = await f.post(buyer.key, '/transaction/send', {
      walletAddress: payer.address,
      recipientAddress: seller.wallet,
      amount: 0.1,
    });
    assert.equal(built.statusCode, 200, built.body);
    const b = built.json();
    const hash = await signAndBroadcastEvm(f.evm.anvil.rpcUrl, b.transaction, payer.privateKey);
    await reconciler.runOnce();
    assert.equal((await stored(b.paymentId)).status, 'confirmed');
    const received = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: b.paymentProof,
      expectedAmount: 0.1,
    });
    assert.equal(received.statusCode, 200, received.body);
    const r = received.json();
    assert.equal(r.status, 'confirmed');

    await rollback(1);
    assert.equal(await receiptOf(hash), undefined);
    // Not found, but the chain has not finalized past its block: nothing is proven, nothing moves.
    await reconciler.runOnce();
    assert.equal((await stored(b.paymentId)).status, 'confirmed');
    assert.equal((await stored(r.paymentId)).status, 'confirmed');

    await f.anvil.mine({ blocks: PAST_FINALITY });
    await reconciler.runOnce(); // the send reverts; the receipt waits for it
    await reconciler.runOnce(); // the receipt follows
    assert.equal(await receiptOf(hash), undefined, 'the gateway never broadcasts what the caller signed');
    for (const [key, id] of [
      [buyer.key, b.paymentId],
      [seller.key, r.paymentId],
    ] as const) {
      const status = (await f.get(key, `/payment/status/${id}`)).json();
      assert.equal(status.status, 'reverted', id);
    }
    assert.deepEqual(await typesOf(buyer.accountId, b.paymentId), ['payment.confirmed', 'payment.reverted']);
    assert.deepEqual(await typesOf(seller.accountId, r.paymentId), ['payment.received', 'payment.reverted']);
    await sellerStream.until(
      (c) =>
        c
          .events()
          .some(
            (e) =>
              e.type === 'payment.reverted' && (e.data as { paymentId?: string }).paymentId === r.paymentId,
          ),
      10_000,
      "the seller's payment.reverted",
    );
    await sellerHooks.until(1);
    assert.equal(sellerHooks.received.length, 1, 'only the reverted receipt: nothing of the first test');
    const delivered = sellerHooks.received[0]?.verified as {
      type: string;
      data: { paymentId: string; status: string };
    };
    assert.equal(delivered.type, 'payment.reverted');
    assert.deepEqual([delivered.data.paymentId, delivered.data.status], [r.paymentId, 'reverted']);
    const history = (await f.get(seller.key, `/payment/history/${seller.wallet}`)).json();
    assert.equal(
      history.payments.find((p: { paymentId: string }) => p.paymentId === r.paymentId)?.status,
      'reverted',
    );

    // The proof backs nothing now: another receive of it is refused as reverted, not as unseen.
    const again = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: b.paymentProof,
      expectedAmount: 0.1,
    });
    assert.equal(again.statusCode, 422, again.body);
    assert.equal(again.json().error.code, 'PAYMENT_VERIFICATION_FAILED');
    assert.equal(again.json().error.details.paymentProof, 'reverted');
    // The send and the seller's receipt of it; the first test's send was reorged and resent.
    assert.deepEqual(await reorgs(), { reorged: 3, resent: 1, reverted: 2 });
  });
});
