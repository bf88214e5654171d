import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type Hex, keccak256, parseGwei, parseTransaction } from 'viem';
import { newId } from '../../../src/domain/ids.ts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import { newPayment } from '../../../src/services/payments/new-payment.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { type EvmPaymentFixture, startEvmPaymentFixture } from '../../support/evm-payment-fixture.ts';
import { type FamilyPaymentFixture, onEvm, onSolana } from '../../support/family-fixtures.ts';
import type { Party } from '../../support/party.ts';
import { type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';

/** What a family's own recovery tests get. */
interface Suite<F> {
  readonly raw: F;
  readonly f: FamilyPaymentFixture;
  readonly buyer: Party;
  readonly seller: Party;
  /** The suite's first reconciler. */
  readonly reconciler: PaymentReconciler;
  eventsOf(accountId: string, paymentId: string): Promise<string[]>;
  storeSignedButUnsent(recipient: string, amount: bigint): Promise<PaymentRecord>;
}

/**
 * Payments a request (or a crashed process) left open, on one chain family, and the reconciler that
 * finishes each exactly once. How the chain is started, moved on and written to is the family's.
 */
interface RecoveryFamily<F> {
  readonly name: string;
  /** The fixture, and a buyer holding 10 whole units. */
  start(): Promise<{ raw: F & { close(): Promise<void> }; buyer: Party }>;
  shared(raw: F): FamilyPaymentFixture;
  reconciler(raw: F, instanceId: string): PaymentReconciler;
  /**
   * What a send leaves behind if its process dies right after the commit: signed, stored with a lapsed
   * lease, never broadcast.
   */
  storeSignedButUnsent(raw: F, buyer: Party, recipient: string, amount: bigint): Promise<PaymentRecord>;
  /** Lets what the reconciler broadcast land. */
  land(raw: F, payments: readonly PaymentRecord[]): Promise<void>;
  familyTests(suite: () => Suite<F>): void;
  after?(raw: F): Promise<void>;
}

function paymentRecovery<F>(family: RecoveryFamily<F>): void {
  describe(`payment recovery on ${family.name}`, { timeout: 120_000 }, () => {
    let raw: F & { close(): Promise<void> };
    let f: FamilyPaymentFixture;
    let buyer: Party;
    let seller: Party;
    let reconciler: PaymentReconciler;

    before(async () => {
      ({ raw, buyer } = await family.start());
      f = family.shared(raw);
      seller = await f.party();
      reconciler = family.reconciler(raw, 'worker-1');
    });
    after(async () => {
      await family.after?.(raw);
      await raw.close();
    });

    async function eventsOf(accountId: string, paymentId: string) {
      const events = await f.gw.store.events.listAfter(accountId, 0, 1000);
      return events.filter((e) => e.paymentId === paymentId).map((e) => e.type);
    }
    const storeSignedButUnsent = (recipient: string, amount: bigint) =>
      family.storeSignedButUnsent(raw, buyer, recipient, amount);

    it('finishes a payment whose process died after storing it and before broadcasting: same bytes, paid once', async () => {
      const recipient = await f.party();
      const amount = (3n * f.family.unit) / 2n;
      const payment = await storeSignedButUnsent(recipient.wallet, amount);
      await pass(reconciler);
      assert.equal((await f.gw.store.payments.get(payment.id))?.status, 'submitted');
      await family.land(raw, [payment]);
      await pass(reconciler);
      await pass(reconciler);
      const done = await f.gw.store.payments.get(payment.id);
      assert.equal(done?.status, 'confirmed');
      assert.equal(done?.signature, payment.signature, 'the stored signature, not a new one');
      assert.equal(done?.replacedSignatures, undefined);
      assert.equal(await f.family.balance(recipient.wallet), amount);
      assert.deepEqual(await eventsOf(buyer.accountId, payment.id), ['payment.sent', 'payment.confirmed']);
    });

    it('lets several workers run at once without handling one payment twice', async () => {
      const recipient = await f.party();
      const hundredth = f.family.unit / 100n;
      const payments: PaymentRecord[] = [];
      // One at a time: on EVM each takes the wallet's next nonce.
      for (const i of [1n, 2n, 3n])
        payments.push(await storeSignedButUnsent(recipient.wallet, i * hundredth));
      const workers = ['a', 'b', 'c'].map((name) => family.reconciler(raw, `worker-${name}`));
      await Promise.all(workers.map(pass));
      await family.land(raw, payments);
      await Promise.all(workers.map(pass));
      for (const payment of payments) {
        const done = await f.gw.store.payments.get(payment.id);
        assert.equal(done?.status, 'confirmed');
        assert.equal(done?.signature, payment.signature, 'broadcast once, as stored');
        assert.deepEqual(await eventsOf(buyer.accountId, payment.id), ['payment.sent', 'payment.confirmed']);
      }
      assert.equal(await f.family.balance(recipient.wallet), 6n * hundredth);
    });

    family.familyTests(() => ({ raw, f, buyer, seller, reconciler, eventsOf, storeSignedButUnsent }));
  });
}

/** One reconciler pass; each of its RPC calls has a time limit, so a pass that does not end is a bug. */
function pass(worker: PaymentReconciler): Promise<number> {
  return within(20_000, 'a reconciler pass', worker.runOnce());
}

const SOLANA: RecoveryFamily<PaymentFixture> = {
  name: 'Solana (slots advanced by the test): answers on time, resends, expiry by blockhash',
  start: async () => {
    const raw = await startPaymentFixture({
      chain: { slotMs: 0, finalizedDepth: 2 },
      gateway: { confirmTimeoutMs: 300 },
    });
    const buyer = await raw.party();
    raw.chain.localnet.airdrop(buyer.wallet, 10n * 1_000_000_000n);
    raw.chain.localnet.advanceSlots(1);
    return { raw, buyer };
  },
  shared: onSolana,
  reconciler: (raw, instanceId) =>
    new PaymentReconciler({
      store: raw.gw.store,
      networks: raw.gw.networks,
      ledger: raw.gw.services.ledger,
      instanceId,
      recheckMs: 0,
    }),
  storeSignedButUnsent: async (raw, buyer, recipient, amount) => {
    const signer = await raw.gw.services.wallets.signer(buyer.accountId, buyer.wallet);
    const id = newId('pay');
    const prepared = await raw.chain.adapter.prepareTransfer({
      from: buyer.wallet,
      to: recipient,
      amount,
      memo: id,
    });
    const signed = await raw.chain.adapter.sign(prepared, signer.secretKey);
    const at = Date.now();
    const payment: PaymentRecord = newPayment(at, {
      id,
      accountId: buyer.accountId,
      direction: 'sent',
      mode: 'custodial',
      status: 'pending',
      network: raw.chain.adapter.info.id,
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
    await raw.gw.services.ledger.record(payment, { lease: { owner: 'dead-process', until: at - 1 } });
    return payment;
  },
  land: async (raw) => raw.chain.localnet.advanceSlots(1),
  familyTests: solanaOnly,
};

function solanaOnly(suite: () => Suite<PaymentFixture>): void {
  it('answers submitted when confirmation is slow, then confirms and finalizes in the background', async () => {
    const { raw: f, buyer, seller, reconciler, eventsOf } = suite();
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

  it('marks a payment that never landed expired once its blockhash is gone, and moves no money', async () => {
    const { raw: f, buyer, reconciler, eventsOf, storeSignedButUnsent } = suite();
    const recipient = await f.party();
    const payment = await storeSignedButUnsent(recipient.wallet, 1_000_000_000n);
    f.chain.localnet.advanceSlots(160);
    await pass(reconciler);
    const expired = await f.gw.store.payments.get(payment.id);
    assert.equal(expired?.status, 'expired');
    assert.equal(await f.chain.adapter.getBalance(recipient.wallet), 0n);
    assert.deepEqual(await eventsOf(buyer.accountId, payment.id), ['payment.expired']);
    const status = (await f.get(buyer.key, `/payment/status/${payment.id}`)).json();
    assert.equal(status.status, 'expired');
  });
}

const ETH = 10n ** 18n;
const REPLACE_AFTER_BLOCKS = 3n;

const EVM: RecoveryFamily<EvmPaymentFixture> = {
  name: 'EVM (anvil): replacement, resend, nonce-based expiry',
  start: async () => {
    const raw = await startEvmPaymentFixture({
      replaceAfterBlocks: REPLACE_AFTER_BLOCKS,
      gateway: { confirmTimeoutMs: 400 },
    });
    return { raw, buyer: await raw.party(10n * ETH) };
  },
  shared: onEvm,
  reconciler: (raw, instanceId) => raw.reconciler(instanceId),
  storeSignedButUnsent: async (raw, buyer, recipient, amount) => {
    const signer = await raw.gw.services.wallets.signer(buyer.accountId, buyer.wallet);
    const id = newId('pay');
    const network = raw.chain.info.id;
    // A nonce, signed bytes, nothing sent.
    return raw.gw.store.transaction(async (tx) => {
      const nonce = await tx.nonces.allocate(network, buyer.wallet, 0n);
      const prepared = await raw.chain.prepareTransfer({
        from: buyer.wallet,
        to: recipient,
        amount,
        memo: id,
        nonce,
      });
      const signed = await raw.chain.sign(prepared, signer.secretKey);
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
      await raw.gw.services.ledger.recordIn(tx, payment, undefined, { owner: 'dead-process', until: at - 1 });
      return payment;
    });
  },
  // anvil mines on arrival, asynchronously.
  land: async (raw, payments) => {
    for (const payment of payments) {
      await raw.chain.waitForConfirmation(payment.signature ?? '', payment.lastValidBlockHeight ?? 0n, 5_000);
    }
  },
  after: (raw) => raw.anvil.setAutomine(true),
  familyTests: evmOnly,
};

function evmOnly(suite: () => Suite<EvmPaymentFixture>): void {
  it('replaces a stuck transaction with the same nonce and ≥10% higher fees; the payment confirms once', async () => {
    const { raw: f, buyer, seller, eventsOf } = suite();
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
    const reconciler = f.reconciler('worker-replace');
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

  it('replaces at once a send the node holds with the next nonce but will never mine; the sends behind it are mined too', async () => {
    const { raw: f, seller } = suite();
    const payer = await f.party(ETH);
    const network = f.chain.info.id;
    const send = () =>
      f.post(payer.key, '/payment/send', {
        walletAddress: payer.wallet,
        recipientAddress: seller.wallet,
        amount: 0.01,
      });
    const sellerBefore = await f.chain.getBalance(seller.wallet);
    // The pool as anvil's race leaves it (seen in CI: 50 concurrent sends, 19 mined, 31 held for good):
    // a send was added while the one before it was being mined, so it waits for a predecessor the pool
    // will never see. Here nonce 0 is taken without a transaction, the send with nonce 1 waits behind it,
    // and the account's nonce then moves past 0 without the pool seeing it.
    await f.gw.store.transaction((tx) => tx.nonces.allocate(network, payer.wallet, 0n));
    const stuck = (await send()).json();
    assert.equal(stuck.status, 'submitted');
    await f.anvil.setNonce({ address: payer.wallet as Hex, nonce: 1 });
    const behind = (await send()).json();
    assert.equal(behind.status, 'submitted');
    assert.deepEqual(
      await Promise.all(
        [stuck, behind].map(async (s) => {
          const tx = await f.anvil.getTransaction({ hash: s.signature as Hex });
          return [tx.nonce, tx.blockNumber];
        }),
      ),
      [
        [1, null],
        [2, null],
      ],
      'both held by the node, neither mined',
    );
    assert.equal(await f.anvil.getTransactionCount({ address: payer.wallet as Hex }), 1);
    await assert.rejects(
      f.anvil.sendRawTransaction({
        serializedTransaction: `0x${Buffer.from((await f.gw.store.payments.get(stuck.paymentId))?.signedTransaction ?? '', 'base64').toString('hex')}`,
      }),
      'the node refuses the same bytes again: a resend cannot move it',
    );

    // No block comes (anvil mines on demand), so the block-counted policy would never replace it.
    const reconciler = f.reconciler('worker-stranded');
    await reconciler.runOnce();
    const replaced = await f.gw.store.payments.get(stuck.paymentId);
    assert.deepEqual(replaced?.replacedSignatures, [stuck.signature], 'replaced in the first pass');
    const replacement = await f.anvil.getTransaction({ hash: replaced?.signature as Hex });
    assert.equal(replacement.nonce, 1);
    assert.deepEqual(
      (await f.gw.store.payments.get(behind.paymentId))?.replacedSignatures ?? [],
      [],
      'the send waiting behind a lower nonce is not replaced: it is no gap of its own',
    );
    for (const s of [replaced, await f.gw.store.payments.get(behind.paymentId)]) {
      const outcome = await f.chain.waitForConfirmation(
        s?.signature ?? '',
        s?.lastValidBlockHeight ?? 0n,
        5_000,
      );
      assert.equal(outcome.status, 'confirmed', `${s?.id} mined within 5 s of the replacement`);
    }
    await reconciler.runOnce();
    assert.deepEqual(
      await Promise.all(
        [stuck, behind].map(async (s) => (await f.gw.store.payments.get(s.paymentId))?.status),
      ),
      ['confirmed', 'confirmed'],
    );
    assert.equal(await f.anvil.getTransactionCount({ address: payer.wallet as Hex }), 3);
    assert.equal(await f.chain.getBalance(seller.wallet), sellerBefore + (2n * ETH) / 100n, 'each paid once');
  });

  it('replaces a stuck token send with the same nonce, token call and calldata; the tokens move once, the proof redeems in USDC', async () => {
    const { raw: f, buyer, seller } = suite();
    const usdc = f.chain.info.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    await f.chain.faucet?.fundToken('USDC', buyer.wallet, 10_000_000n);
    const sellerBefore = await f.chain.getTokenBalance(seller.wallet, usdc);
    await f.anvil.setAutomine(false);
    const sent = await f.post(buyer.key, '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 3.5,
      asset: 'USDC',
    });
    assert.equal(sent.statusCode, 200, sent.body);
    const s = sent.json();
    assert.equal(s.status, 'submitted');
    const original = await f.anvil.getTransaction({ hash: s.signature as Hex });
    assert.equal(original.to?.toLowerCase(), usdc.toLowerCase(), 'a call of the token contract');
    assert.equal(original.value, 0n);

    // The base fee jumps past what the transaction offers (its cap is twice the base fee it saw, plus the tip).
    const offered = (await f.anvil.getTransaction({ hash: s.signature as Hex })).maxFeePerGas ?? 0n;
    await f.anvil.setNextBlockBaseFeePerGas({ baseFeePerGas: offered * 2n });
    await f.anvil.mine({ blocks: 1 + Number(REPLACE_AFTER_BLOCKS) });
    const reconciler = f.reconciler('worker-replace-token');
    await reconciler.runOnce();
    const stored = await f.gw.store.payments.get(s.paymentId);
    assert.ok(stored?.signature && stored.signature !== s.signature, 'replaced');
    assert.deepEqual(stored.asset, { address: usdc, decimals: 6 });
    const replacement = await f.anvil.getTransaction({ hash: stored.signature as Hex });
    assert.equal(replacement.nonce, original.nonce);
    assert.equal(replacement.to, original.to);
    assert.equal(replacement.value, 0n);
    assert.equal(replacement.input, original.input, 'the same transfer(recipient, amount) and note');

    await f.anvil.mine({ blocks: 1 });
    await reconciler.runOnce();
    assert.equal((await f.gw.store.payments.get(s.paymentId))?.status, 'confirmed');
    await f.anvil.setAutomine(true);
    assert.equal(await f.chain.getTokenBalance(seller.wallet, usdc), sellerBefore + 3_500_000n, 'paid once');
    assert.equal(await f.chain.getTokenBalance(buyer.wallet, usdc), 6_500_000n);

    const receive = () =>
      f.post(seller.key, '/payment/receive', {
        walletAddress: seller.wallet,
        paymentProof: s.paymentProof,
        expectedAmount: 3.5,
        asset: 'USDC',
      });
    const received = await receive();
    assert.equal(received.statusCode, 200, received.body);
    assert.equal(received.json().signature, stored.signature);
    assert.equal((await receive()).json().error.details.paymentProof, 'already_used');
  });

  it('marks a send expired only once its nonce is used by another transaction, and it pays nothing', async () => {
    const { raw: f, buyer, seller, eventsOf, storeSignedButUnsent } = suite();
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

paymentRecovery(SOLANA);
paymentRecovery(EVM);
