import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Hex, keccak256, parseGwei, parseTransaction } from 'viem';
import { newId } from '../../../src/domain/ids.ts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import { newPayment } from '../../../src/services/payments/new-payment.ts';
import {
  ETH,
  type EvmParty,
  type EvmPaymentFixture,
  startEvmPaymentFixture,
} from '../../support/evm-payment-fixture.ts';

const REPLACE_AFTER_BLOCKS = 3n;

/**
 * EVM sends the request could not finish: stuck under a rising base fee, stored but never broadcast,
 * or overtaken by another transaction with their nonce. The reconciler finishes each exactly once.
 */
describe('EVM payment recovery: replacement, resend, nonce-based expiry', () => {
  let f: EvmPaymentFixture;
  let buyer: EvmParty;
  let seller: EvmParty;

  before(async () => {
    f = await startEvmPaymentFixture({
      replaceAfterBlocks: REPLACE_AFTER_BLOCKS,
      gateway: { confirmTimeoutMs: 400 },
    });
    buyer = await f.party(10n * ETH);
    seller = await f.party();
  });
  after(async () => {
    await f.anvil.setAutomine(true);
    await f.close();
  });

  async function eventsOf(accountId: string, paymentId: string) {
    const events = await f.gw.store.events.listAfter(accountId, 0, 1000);
    return events.filter((e) => e.paymentId === paymentId).map((e) => e.type);
  }

  it('replaces a stuck transaction with the same nonce and ≥10% higher fees; the payment confirms once', async () => {
    await f.anvil.setAutomine(false);
    const sent = await f.post(buyer.key, '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 0.25,
    });
    assert.equal(sent.statusCode, 200, sent.body);
    const s = sent.json();
    assert.equal(s.status, 'submitted');
    const original = await f.anvil.getTransaction({ hash: s.signature as Hex });

    // The base fee jumps past what the transaction offers: it stays in the pool while blocks go by.
    await f.anvil.setNextBlockBaseFeePerGas({ baseFeePerGas: parseGwei('100') });
    await f.anvil.mine({ blocks: 1 });
    const reconciler = f.reconciler('worker-1');
    await reconciler.runOnce();
    let stored = await f.gw.store.payments.get(s.paymentId);
    assert.equal(stored?.signature, s.signature, 'not replaced before the policy says so');
    await f.anvil.mine({ blocks: Number(REPLACE_AFTER_BLOCKS) });
    await reconciler.runOnce();

    stored = await f.gw.store.payments.get(s.paymentId);
    assert.ok(stored?.signature && stored.signature !== s.signature, 'replaced');
    assert.deepEqual(stored.replacedSignatures, [s.signature]);
    assert.equal(stored.status, 'submitted');
    const replacement = await f.anvil.getTransaction({ hash: stored.signature as Hex });
    assert.equal(replacement.nonce, original.nonce);
    assert.equal(replacement.to, original.to);
    assert.equal(replacement.value, original.value);
    assert.equal(replacement.input, original.input);
    assert.ok((replacement.maxPriorityFeePerGas ?? 0n) * 10n >= (original.maxPriorityFeePerGas ?? 0n) * 11n);
    assert.ok((replacement.maxFeePerGas ?? 0n) * 10n >= (original.maxFeePerGas ?? 0n) * 11n);
    const storedBytes = `0x${Buffer.from(stored.signedTransaction ?? '', 'base64').toString('hex')}` as Hex;
    assert.equal(keccak256(storedBytes), stored.signature, 'the stored bytes are the replacement');
    assert.equal(parseTransaction(storedBytes).nonce, original.nonce);

    const before = await f.chain.getBalance(buyer.wallet);
    await f.anvil.mine({ blocks: 1 });
    await reconciler.runOnce();
    const done = await f.gw.store.payments.get(s.paymentId);
    assert.equal(done?.status, 'confirmed');
    assert.equal(done?.signature, stored.signature);
    const receipt = await f.anvil.getTransactionReceipt({ hash: stored.signature as Hex });
    await assert.rejects(
      f.anvil.getTransactionReceipt({ hash: s.signature as Hex }),
      'the original never lands',
    );
    assert.equal(await f.chain.getBalance(seller.wallet), ETH / 4n, 'paid once');
    assert.equal(
      await f.chain.getBalance(buyer.wallet),
      before - ETH / 4n - receipt.gasUsed * receipt.effectiveGasPrice,
    );
    assert.deepEqual(await eventsOf(buyer.accountId, s.paymentId), ['payment.sent', 'payment.confirmed']);
    await f.anvil.setAutomine(true);

    // The proof given at the send names the original transaction; it still redeems, once.
    const received = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: s.paymentProof,
      expectedAmount: 0.25,
    });
    assert.equal(received.statusCode, 200, received.body);
    assert.equal(received.json().signature, stored.signature);
    const again = await f.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: s.paymentProof,
      expectedAmount: 0.25,
    });
    assert.equal(again.statusCode, 422);
    assert.equal(again.json().error.details.paymentProof, 'already_used');
    const status = (await f.get(buyer.key, `/payment/status/${s.paymentId}`)).json();
    assert.equal(status.signature, stored.signature);
  });

  it('finishes a send whose process died after storing it and before broadcasting: the same bytes, paid once', async () => {
    const recipient = await f.party();
    const payment = await storeSignedButUnsent(recipient.wallet, 1_500_000_000_000_000_000n);
    const reconciler = f.reconciler('worker-2');
    await reconciler.runOnce();
    assert.equal((await f.gw.store.payments.get(payment.id))?.status, 'submitted');
    // anvil mines on arrival, asynchronously.
    await f.chain.waitForConfirmation(payment.signature ?? '', payment.lastValidBlockHeight ?? 0n, 5_000);
    await reconciler.runOnce();
    const done = await f.gw.store.payments.get(payment.id);
    assert.equal(done?.status, 'confirmed');
    assert.equal(done?.signature, payment.signature, 'the stored transaction, not a new one');
    assert.equal(done?.replacedSignatures, undefined);
    assert.equal(await f.chain.getBalance(recipient.wallet), 1_500_000_000_000_000_000n);
    assert.deepEqual(await eventsOf(buyer.accountId, payment.id), ['payment.sent', 'payment.confirmed']);
  });

  it('marks a send expired only once its nonce is used by another transaction, and it pays nothing', async () => {
    const recipient = await f.party();
    const payment = await storeSignedButUnsent(recipient.wallet, ETH);
    // Past gate402's 150-block deadline and never mined, it is not final while its nonce is free:
    // the reconciler offers it again (here replaced, as it waited past the replacement policy).
    await f.anvil.setAutomine(false);
    await f.anvil.mine({ blocks: 160 });
    const reconciler = f.reconciler('worker-3');
    await reconciler.runOnce();
    const waiting = await f.gw.store.payments.get(payment.id);
    assert.equal(waiting?.status, 'submitted');
    assert.deepEqual(waiting?.replacedSignatures, [payment.signature]);
    // The node forgets both; another transaction takes the nonce.
    for (const hash of [payment.signature, waiting?.signature]) {
      await f.anvil.dropTransaction({ hash: hash as Hex });
    }
    await f.anvil.setAutomine(true);

    // Another transaction takes the nonce first.
    const signer = await f.gw.services.wallets.signer(buyer.accountId, buyer.wallet);
    const other = await f.chain.prepareTransfer({
      from: buyer.wallet,
      to: seller.wallet,
      amount: 1n,
      nonce: payment.nonce ?? -1n,
    });
    const signed = await f.chain.sign(other, signer.secretKey);
    await f.chain.broadcast(signed.wire);
    await f.chain.waitForConfirmation(signed.signature, signed.lastValidBlockHeight, 5_000);

    await reconciler.runOnce();
    const expired = await f.gw.store.payments.get(payment.id);
    assert.equal(expired?.status, 'expired');
    assert.match(expired?.error ?? '', /nonce \d+ was used by another transaction/);
    assert.equal(await f.chain.getBalance(recipient.wallet), 0n);
    assert.deepEqual(await eventsOf(buyer.accountId, payment.id), ['payment.sent', 'payment.expired']);
  });

  /** What a send leaves if its process dies right after the commit: a nonce, signed bytes, nothing sent. */
  async function storeSignedButUnsent(recipient: string, amount: bigint): Promise<PaymentRecord> {
    const signer = await f.gw.services.wallets.signer(buyer.accountId, buyer.wallet);
    const id = newId('pay');
    const network = f.chain.info.id;
    return f.gw.store.transaction(async (tx) => {
      const nonce = await tx.nonces.allocate(network, buyer.wallet, 0n);
      const prepared = await f.chain.prepareTransfer({
        from: buyer.wallet,
        to: recipient,
        amount,
        memo: id,
        nonce,
      });
      const signed = await f.chain.sign(prepared, signer.secretKey);
      const at = Date.now();
      const payment: PaymentRecord = newPayment(at, {
        id,
        accountId: buyer.accountId,
        direction: 'sent',
        mode: 'custodial',
        status: 'pending',
        network,
        walletAddress: buyer.wallet,
        sender: buyer.wallet,
        recipient,
        amount,
        fee: prepared.fee,
        signature: signed.signature,
        signedTransaction: Buffer.from(signed.wire).toString('base64'),
        lastValidBlockHeight: signed.lastValidBlockHeight,
        nonce,
      });
      // The dead process's lease has lapsed.
      await f.gw.services.ledger.recordIn(tx, payment, undefined, { owner: 'dead-process', until: at - 1 });
      return payment;
    });
  }
});
