import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Address, createSolanaRpc } from '@solana/kit';
import type { Hex } from 'viem';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import type { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { countingReconciler } from '../../support/counting-reconciler.ts';
import { newEvmLocalWallet, signAndBroadcastEvm } from '../../support/evm-local-signer.ts';
import { type EvmPaymentFixture, startEvmPaymentFixture } from '../../support/evm-payment-fixture.ts';
import { type FamilyPaymentFixture, onEvm, onSolana } from '../../support/family-fixtures.ts';
import { signAndBroadcast } from '../../support/local-signer.ts';
import type { Party } from '../../support/party.ts';
import { type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';
import { openStream, type StreamClient } from '../../support/stream-client.ts';
import { bearer, type TestGatewayOptions } from '../../support/test-gateway.ts';
import { until } from '../../support/until.ts';
import { WebhookReceiver } from '../../support/webhook-receiver.ts';

/** Events delivered fast, to a receiver on loopback. */
const EVENTS: TestGatewayOptions = {
  allowPrivateOutboundUrls: true,
  events: { config: { allowPrivateOutboundUrls: true, webhookRetryBaseMs: 50, eventsPollMs: 50 } },
};

/**
 * Real reorganisations of one chain family: the block (slot) of a confirmed payment leaves the chain,
 * with its transactions, and the gateway's reconciler must either land the same signed bytes again or
 * say `reverted` — never leave a payment confirmed or finalized whose transaction is not in the chain.
 * How the chain is reorganised, moved on and read is the family's.
 */
interface ReorgFamily<F> {
  readonly name: string;
  /** The word for where a transaction lands, for test names: slot, block. */
  readonly block: string;
  start(): Promise<F & { close(): Promise<void> }>;
  shared(raw: F): FamilyPaymentFixture;
  adapter(raw: F): ChainAdapter;
  /** What a buyer is funded with, in atomic units. */
  readonly buyerFunds: bigint;
  /** Takes the block (slot) of `payment` and everything after it out of the chain. */
  dropBlockOf(raw: F, payment: PaymentRecord): Promise<void>;
  /** Lets the chain move on after a reorg, before the reconciler looks (anvil: 3 new blocks). */
  moveOn(raw: F): Promise<void>;
  /** The balance the chain confirms now. */
  confirmedBalance(raw: F, address: string): Promise<bigint>;
  /** Whether `signature` is in the chain. */
  inChain(raw: F, signature: string): Promise<boolean>;
  /** Waits for `signature` to land (again); the slot (block number) it is in. */
  landed(raw: F, signature: string): Promise<bigint>;
  /** Waits until the chain has finalized past `slot`. */
  finalizePast(raw: F, slot: bigint): Promise<void>;
  /** A wallet of the caller's own with one whole unit, that signs `transaction` and broadcasts it until it confirms. */
  localPayer(raw: F): Promise<{ address: string; pay(transaction: string): Promise<string> }>;
}

function reorgs<F>(family: ReorgFamily<F>): void {
  describe(`reorgs on ${family.name}: a confirmed payment whose ${family.block} leaves the chain`, () => {
    let raw: F & { close(): Promise<void> };
    let f: FamilyPaymentFixture;
    let buyer: Party;
    let seller: Party;
    let reconciler: PaymentReconciler;
    let sellerStream: StreamClient;
    const sellerHooks = new WebhookReceiver();
    let reorgCounts: () => Promise<Record<string, number>>;

    before(async () => {
      raw = await family.start();
      f = family.shared(raw);
      buyer = await f.party(family.buyerFunds, 'premium');
      seller = await f.party(0n, 'premium');
      const counting = countingReconciler(f.gw, 'reorg-worker');
      reconciler = counting.reconciler;
      reorgCounts = () => counting.reorgCounts(f.network);
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
      await raw.close();
    });

    const stored = async (id: string) => {
      const payment = await f.gw.store.payments.get(id);
      assert.ok(payment, id);
      return payment;
    };
    async function typesOf(accountId: string, paymentId: string) {
      return (await f.gw.store.events.listAfter(accountId, 0, 1000))
        .filter((e) => e.paymentId === paymentId)
        .map((e) => e.type);
    }

    it(`a custodial send: the same signed bytes are broadcast again and land in a new ${family.block}; same id, paid once, then finalized`, async () => {
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
      await until(
        'the payment confirmed on chain',
        async () => (await family.confirmedBalance(raw, seller.wallet)) > 0n,
      );
      const paid = await family.confirmedBalance(raw, seller.wallet);
      assert.equal(paid, f.family.unit / 4n);

      await family.dropBlockOf(raw, first);
      await family.moveOn(raw);
      assert.equal(await family.inChain(raw, s.signature), false, 'the block and its transaction are gone');
      assert.equal(await family.confirmedBalance(raw, seller.wallet), paid - f.family.unit / 4n);

      await reconciler.runOnce(); // resends the stored bytes
      // The same transaction (the same signature: the same signed bytes) is in the chain again.
      const slot = await family.landed(raw, s.signature);
      await reconciler.runOnce(); // both records see it in its new block
      assert.ok(slot > first.slot, `a new ${family.block}`);
      const blockHeight = await family.adapter(raw).blockHeightOf(slot);
      for (const id of [s.paymentId, r.paymentId]) {
        const p = await stored(id);
        assert.equal(p.status, 'confirmed', id);
        assert.equal(p.signature, s.signature);
        assert.equal(p.slot, slot, `${id} has the new ${family.block}`);
        assert.equal(p.blockHeight, blockHeight);
        assert.equal(p.error, null);
      }
      assert.equal((await stored(s.paymentId)).signedTransaction, first.signedTransaction, 'never re-signed');
      assert.equal(await family.confirmedBalance(raw, seller.wallet), paid, 'paid once');
      const status = (await f.get(seller.key, `/payment/status/${r.paymentId}`)).json();
      assert.equal(status.blockHeight, Number(blockHeight));

      await family.finalizePast(raw, slot);
      await reconciler.runOnce();
      assert.equal((await stored(s.paymentId)).status, 'finalized');
      assert.equal((await stored(r.paymentId)).status, 'finalized');
      assert.ok(!(await typesOf(buyer.accountId, s.paymentId)).includes('payment.reverted'));
      assert.deepEqual(await reorgCounts(), { reorged: 1, resent: 1 });
    });

    it(`a local-mode send its caller does not resend: confirmed until finality passes its ${family.block}, then reverted, with payment.reverted in the outbox, on the stream and by webhook; its proof is refused`, async () => {
      const payer = await family.localPayer(raw);
      const built = await f.post(buyer.key, '/transaction/send', {
        walletAddress: payer.address,
        recipientAddress: seller.wallet,
        amount: 0.1,
      });
      assert.equal(built.statusCode, 200, built.body);
      const b = built.json();
      const signature = await payer.pay(b.transaction);
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

      await family.dropBlockOf(raw, confirmed);
      assert.equal(await family.inChain(raw, signature), false);
      // Not found, but the chain has not finalized past its block: nothing is proven, nothing moves.
      await reconciler.runOnce();
      assert.equal((await stored(b.paymentId)).status, 'confirmed');
      assert.equal((await stored(r.paymentId)).status, 'confirmed');

      await family.finalizePast(raw, confirmed.slot);
      await reconciler.runOnce(); // the send reverts; the receipt waits for it
      await reconciler.runOnce(); // the receipt follows
      assert.equal(
        await family.inChain(raw, signature),
        false,
        'the gateway never broadcasts what the caller signed',
      );
      for (const [key, id] of [
        [buyer.key, b.paymentId],
        [seller.key, r.paymentId],
      ] as const) {
        const status = (await f.get(key, `/payment/status/${id}`)).json();
        assert.equal(status.status, 'reverted', id);
      }
      assert.deepEqual(await typesOf(buyer.accountId, b.paymentId), [
        'payment.confirmed',
        'payment.reverted',
      ]);
      assert.deepEqual(await typesOf(seller.accountId, r.paymentId), [
        'payment.received',
        'payment.reverted',
      ]);
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
      assert.deepEqual(await reorgCounts(), { reorged: 3, resent: 1, reverted: 2 });
    });
  });
}

/** Deep enough that a confirmed payment is far from finalized when its slots are dropped. */
const FINALIZED_DEPTH = 100;

/**
 * The localnet's test hook `dropSlots` takes the slots from a payment's on out of the chain: blocks,
 * transactions and their effects. Its slots move on by themselves (20 ms).
 */
const SOLANA: ReorgFamily<PaymentFixture> = {
  name: 'the localnet',
  block: 'slot',
  start: () =>
    startPaymentFixture({
      chain: { testHooks: true, slotMs: 20, finalizedDepth: FINALIZED_DEPTH },
      gateway: EVENTS,
    }),
  shared: onSolana,
  adapter: (raw) => raw.chain.adapter,
  buyerFunds: 2_000_000_000n,
  // Synchronous: the slot clock cannot move in between.
  dropBlockOf: async (raw, payment) => {
    const { localnet } = raw.chain;
    const dropped = localnet.dropSlots(localnet.slot - Number(payment.slot));
    assert.equal(dropped[0], Number(payment.slot));
  },
  moveOn: async () => {},
  confirmedBalance: async (raw, address) => {
    const rpc = createSolanaRpc(raw.chain.localnet.rpcUrl);
    return (await rpc.getBalance(address as Address, { commitment: 'confirmed' }).send()).value;
  },
  inChain: async (raw, signature) => (await raw.chain.adapter.getSignatureStatus(signature)) !== undefined,
  landed: async (raw, signature) => {
    await until('the same transaction to land again', async () => {
      const outcome = await raw.chain.adapter.getSignatureStatus(signature);
      return outcome?.status === 'confirmed' || outcome?.status === 'finalized';
    });
    const landed = await raw.chain.adapter.getSignatureStatus(signature);
    assert.ok(landed && landed.status !== 'failed' && 'slot' in landed);
    return landed.slot;
  },
  finalizePast: (raw, slot) =>
    until(`finality past slot ${slot}`, async () => (await raw.chain.adapter.finalizedSlot()) >= slot),
  localPayer: async (raw) => {
    const payer = generateSolanaKeypair();
    raw.chain.localnet.airdrop(payer.address, 1_000_000_000n);
    await until('the payer funded', async () => (await SOLANA.confirmedBalance(raw, payer.address)) > 0n);
    return {
      address: payer.address,
      pay: async (transaction) => {
        const signature = await signAndBroadcast(raw.chain.localnet.rpcUrl, transaction, payer.secretKey);
        await until('the send confirmed', async () => {
          const outcome = await raw.chain.adapter.getSignatureStatus(signature);
          return outcome?.status === 'confirmed';
        });
        return signature;
      },
    };
  },
};

/** anvil (no block time) calls a block finalized 64 blocks deep. */
const PAST_FINALITY = 70;

/**
 * anvil_rollback drops the newest block and its transactions; nothing puts them back in the pool.
 * anvil mines a block per transaction and otherwise only when told.
 */
const EVM: ReorgFamily<EvmPaymentFixture> = {
  name: 'anvil',
  block: 'block',
  start: () => startEvmPaymentFixture({ gateway: EVENTS }),
  shared: onEvm,
  adapter: (raw) => raw.chain,
  buyerFunds: 10n * 10n ** 18n,
  dropBlockOf: async (raw, payment) => {
    assert.equal(await raw.anvil.getBlockNumber(), payment.slot, 'the payment is in the newest block');
    await raw.anvil.request({ method: 'anvil_rollback', params: [1] } as never as {
      method: 'anvil_mine';
      params: [Hex, Hex];
    });
  },
  moveOn: async (raw) => raw.anvil.mine({ blocks: 3 }),
  confirmedBalance: (raw, address) => raw.chain.getBalance(address),
  inChain: (raw, signature) =>
    raw.anvil.getTransactionReceipt({ hash: signature as Hex }).then(
      () => true,
      () => false,
    ),
  landed: async (raw, signature) =>
    (
      await raw.anvil.waitForTransactionReceipt({
        hash: signature as Hex,
        pollingInterval: 20,
        timeout: 5_000,
      })
    ).blockNumber,
  finalizePast: async (raw) => raw.anvil.mine({ blocks: PAST_FINALITY }),
  localPayer: async (raw) => {
    const payer = newEvmLocalWallet();
    await raw.chain.faucet?.fundNative(payer.address, 10n ** 18n);
    return {
      address: payer.address,
      pay: (transaction) => signAndBroadcastEvm(raw.evm.anvil.rpcUrl, transaction, payer.privateKey),
    };
  },
};

reorgs(SOLANA);
reorgs(EVM);
