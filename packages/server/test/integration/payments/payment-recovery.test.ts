import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { newId } from '../../../src/domain/ids.ts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import { newPayment } from '../../../src/services/payments/new-payment.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import {
  LAMPORTS,
  type Party,
  type PaymentFixture,
  startPaymentFixture,
} from '../../support/payment-fixture.ts';

/**
 * Payment states over time on a localnet whose slots advance only when the test says so, and the
 * reconciler that finishes what a request (or a crashed process) left open.
 */
describe('payment states and recovery', { timeout: 120_000 }, () => {
  let f: PaymentFixture;
  let buyer: Party;
  let seller: Party;
  let reconciler: PaymentReconciler;

  before(async () => {
    f = await startPaymentFixture({
      chain: { slotMs: 0, finalizedDepth: 2 },
      gateway: { confirmTimeoutMs: 300 },
    });
    buyer = await f.party();
    f.chain.localnet.airdrop(buyer.wallet, 10n * LAMPORTS);
    f.chain.localnet.advanceSlots(1);
    seller = await f.party();
    reconciler = reconcilerFor(f, 'worker-1');
  });
  after(() => f.close());

  async function eventsOf(accountId: string, paymentId: string) {
    const events = await f.gw.store.events.listAfter(accountId, 0, 1000);
    return events.filter((e) => e.paymentId === paymentId).map((e) => e.type);
  }

  it('answers submitted when confirmation is slow, then confirms and finalizes in the background', async () => {
    // Nothing advances the chain while the send waits: it must answer on its own deadline (300 ms),
    // whatever the garbage collector does meanwhile. That deadline was once an AbortSignal.timeout inside
    // AbortSignal.any, which a full collection could take away, and the send then never answered (a
    // hang in one CI run of six); collecting all along the send makes that fail every time.
    const collecting = setInterval(collectGarbage, 20);
    const sent = await within(
      10_000,
      'POST /payment/send (confirmTimeoutMs 300 ms, no new slot while it waits)',
      f.post(buyer.key, '/payment/send', {
        walletAddress: buyer.wallet,
        recipientAddress: seller.wallet,
        amount: 0.25,
      }),
    ).finally(() => clearInterval(collecting));
    assert.equal(sent.statusCode, 200, sent.body);
    assert.equal(sent.json().status, 'submitted');
    assert.equal(sent.json().blockHeight, null);
    const { paymentId } = sent.json();
    assert.equal((await f.get(buyer.key, `/payment/status/${paymentId}`)).json().status, 'submitted');

    f.chain.localnet.advanceSlots(1);
    await pass(reconciler);
    const confirmed = (await f.get(buyer.key, `/payment/status/${paymentId}`)).json();
    assert.equal(confirmed.status, 'confirmed');
    assert.equal(typeof confirmed.blockHeight, 'number');

    f.chain.localnet.advanceSlots(3);
    await pass(reconciler);
    assert.equal((await f.get(buyer.key, `/payment/status/${paymentId}`)).json().status, 'finalized');
    assert.deepEqual(await eventsOf(buyer.accountId, paymentId), [
      'payment.sent',
      'payment.confirmed',
      'payment.finalized',
    ]);
    assert.equal(await f.chain.adapter.getBalance(seller.wallet), 250_000_000n);
  });

  it('finishes a payment whose process died after storing it and before broadcasting: same bytes, paid once', async () => {
    const recipient = await f.party();
    const payment = await storeSignedButUnsent(recipient.wallet, 1_500_000_000n);
    await pass(reconciler);
    assert.equal((await f.gw.store.payments.get(payment.id))?.status, 'submitted');
    f.chain.localnet.advanceSlots(1);
    await pass(reconciler);
    await pass(reconciler);
    const done = await f.gw.store.payments.get(payment.id);
    assert.equal(done?.status, 'confirmed');
    assert.equal(done?.signature, payment.signature, 'the stored signature, not a new one');
    assert.equal(await f.chain.adapter.getBalance(recipient.wallet), 1_500_000_000n);
    assert.deepEqual(await eventsOf(buyer.accountId, payment.id), ['payment.sent', 'payment.confirmed']);
  });

  it('marks a payment that never landed expired once its blockhash is gone, and moves no money', async () => {
    const recipient = await f.party();
    const payment = await storeSignedButUnsent(recipient.wallet, LAMPORTS);
    f.chain.localnet.advanceSlots(160);
    await pass(reconciler);
    const expired = await f.gw.store.payments.get(payment.id);
    assert.equal(expired?.status, 'expired');
    assert.equal(await f.chain.adapter.getBalance(recipient.wallet), 0n);
    assert.deepEqual(await eventsOf(buyer.accountId, payment.id), ['payment.expired']);
    const status = (await f.get(buyer.key, `/payment/status/${payment.id}`)).json();
    assert.equal(status.status, 'expired');
  });

  it('lets several workers run at once without handling one payment twice', async () => {
    const recipient = await f.party();
    const payments = await Promise.all(
      [1, 2, 3].map((i) => storeSignedButUnsent(recipient.wallet, BigInt(i) * 10_000_000n)),
    );
    const workers = ['a', 'b', 'c'].map((name) => reconcilerFor(f, `worker-${name}`));
    await Promise.all(workers.map(pass));
    f.chain.localnet.advanceSlots(1);
    await Promise.all(workers.map(pass));
    for (const payment of payments) {
      assert.equal((await f.gw.store.payments.get(payment.id))?.status, 'confirmed');
      assert.deepEqual(await eventsOf(buyer.accountId, payment.id), ['payment.sent', 'payment.confirmed']);
    }
    assert.equal(await f.chain.adapter.getBalance(recipient.wallet), 60_000_000n);
  });

  /** One reconciler pass; each of its RPC calls has a time limit, so a pass that does not end is a bug. */
  function pass(worker: PaymentReconciler): Promise<number> {
    return within(20_000, 'a reconciler pass', worker.runOnce());
  }

  /** What a send leaves behind if its process dies right after the insert: signed, stored, never sent. */
  async function storeSignedButUnsent(recipient: string, amount: bigint): Promise<PaymentRecord> {
    const signer = await f.gw.services.wallets.signer(buyer.accountId, buyer.wallet);
    const id = newId('pay');
    const prepared = await f.chain.adapter.prepareTransfer({
      from: buyer.wallet,
      to: recipient,
      amount,
      memo: id,
    });
    const signed = await f.chain.adapter.sign(prepared, signer.secretKey);
    const at = Date.now();
    const payment: PaymentRecord = newPayment(at, {
      id,
      accountId: buyer.accountId,
      direction: 'sent',
      mode: 'custodial',
      status: 'pending',
      network: f.chain.adapter.info.id,
      walletAddress: buyer.wallet,
      sender: buyer.wallet,
      recipient,
      amount,
      fee: prepared.fee,
      signature: signed.signature,
      signedTransaction: Buffer.from(signed.wire).toString('base64'),
      lastValidBlockHeight: signed.lastValidBlockHeight,
    });
    // The dead process's lease has lapsed.
    await f.gw.services.ledger.record(payment, { lease: { owner: 'dead-process', until: at - 1 } });
    return payment;
  }
});

function reconcilerFor(f: PaymentFixture, instanceId: string): PaymentReconciler {
  return new PaymentReconciler({
    store: f.gw.store,
    networks: f.gw.networks,
    ledger: f.gw.services.ledger,
    instanceId,
    recheckMs: 0,
  });
}

/** A full garbage collection, as a busy machine may run at any moment (`gc` without --expose-gc). */
const collectGarbage = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

/**
 * `work`, or a failure naming `what` once `ms` have passed. Every wait in this file ends by itself (a
 * send answers `submitted` after confirmTimeoutMs, an RPC call gives up after its time limit); one that
 * does not fails here, by name, instead of holding the run until the runner's limit.
 */
async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
