import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { ChainTransaction, ConfirmationOutcome } from '../../../src/chains/chain-adapter.ts';
import { ChainError } from '../../../src/chains/chain-error.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import type { SettlementRecord } from '../../../src/domain/records/settlement-records.ts';
import { AccountService } from '../../../src/services/accounts/account-service.ts';
import { PaymentLedger } from '../../../src/services/payments/payment-ledger.ts';
import { openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { type FinalityChain, FinalityWatch, RESENDING_NOTE } from '../../../src/workers/finality-watch.ts';
import { tempSqlite } from '../../support/databases.ts';
import { aTestPayment } from '../../support/test-payment.ts';

/**
 * A Solana-like chain (no nonces: a transaction is valid until the height passes its blockhash's
 * lastValidBlockHeight) that can drop its newest slots, and a node that can lag: its finalized slot and
 * the signatures it knows held back — the lag is what the embedded localnet cannot play; real slot drops
 * on it are tested in reorg.test.ts.
 */
class ForkableChain implements FinalityChain {
  slot = 100n;
  finalized = 68n;
  /** Signature → slot and outcome, for transactions in the canonical chain. */
  readonly landed = new Map<string, { slot: bigint; error: string | null }>();
  readonly broadcasts: string[] = [];
  /** What a broadcast of these bytes does: land (at the next slot), fail, or be refused. */
  onBroadcast: 'land' | 'fail' | 'refuse' = 'land';
  /** A lagging node answers from this view instead. */
  lagging: { finalized: bigint } | undefined;
  /** A node without the history of statuses: a status older than this slot is "not found". */
  statusesSince: bigint | undefined;

  land(signature: string, error: string | null = null): bigint {
    this.slot += 1n;
    this.landed.set(signature, { slot: this.slot, error });
    return this.slot;
  }

  /** The hook the localnet needs (test-only): the newest `n` slots leave the chain, with their transactions. */
  dropSlots(n: bigint): void {
    const from = this.slot - n + 1n;
    for (const [signature, at] of this.landed) if (at.slot >= from) this.landed.delete(signature);
  }

  /** Blocks go by and finality follows 32 slots behind, as on Solana. */
  advance(slots: bigint): void {
    this.slot += slots;
    this.finalized = this.slot - 32n;
  }

  async finalizedSlot(): Promise<bigint> {
    return this.lagging?.finalized ?? this.finalized;
  }
  async getSignatureStatus(signature: string): Promise<ConfirmationOutcome | undefined> {
    const at = this.landed.get(signature);
    if (at === undefined || (this.lagging !== undefined && at.slot > this.lagging.finalized))
      return undefined;
    if (this.statusesSince !== undefined && at.slot < this.statusesSince) return undefined;
    if (at.error !== null) return { status: 'failed', slot: at.slot, error: at.error };
    return { status: at.slot <= (await this.finalizedSlot()) ? 'finalized' : 'confirmed', slot: at.slot };
  }
  async getTransaction(signature: string): Promise<ChainTransaction | undefined> {
    const at = this.landed.get(signature);
    if (at === undefined || (this.lagging !== undefined && at.slot > this.lagging.finalized))
      return undefined;
    return {
      signature,
      slot: at.slot,
      blockTime: null,
      fee: 5_000n,
      error: at.error,
      feePayer: 'WALLET',
      nativeTransfers: [],
      memos: [],
      accounts: [],
    };
  }
  /** Block height = slot here (no skipped slots). */
  async getBlockHeight(): Promise<bigint> {
    return this.slot;
  }
  async blockHeightOf(slot: bigint): Promise<bigint> {
    return slot;
  }
  async broadcast(wire: Uint8Array): Promise<string> {
    const signature = Buffer.from(wire).toString('utf8');
    this.broadcasts.push(signature);
    if (this.onBroadcast === 'refuse') throw new ChainError('rejected', 'insufficient funds');
    this.land(signature, this.onBroadcast === 'fail' ? '{"InstructionError":[0,"Custom"]}' : null);
    return signature;
  }
}

describe('finality watch: a confirmed payment whose transaction leaves the chain (Solana-like fake)', () => {
  let store: Store;
  let dispose: () => Promise<void>;
  let ledger: PaymentLedger;
  let buyer: string;
  let seller: string;
  let chain: ForkableChain;
  let watch: FinalityWatch;
  const counted: string[] = [];

  before(async () => {
    const storage = tempSqlite();
    dispose = storage.dispose;
    ({ store } = await openStore(storage.location));
    ledger = new PaymentLedger(store, new NetworkRegistry([]));
    const accounts = new AccountService(store);
    buyer = (await accounts.createAccount({ name: 'buyer', plan: 'standard' })).id;
    seller = (await accounts.createAccount({ name: 'seller', plan: 'standard' })).id;
  });
  after(async () => {
    await store.close();
    await dispose();
  });
  beforeEach(() => {
    chain = new ForkableChain();
    counted.length = 0;
    watch = new FinalityWatch({
      payments: store.payments,
      ledger,
      now: Date.now,
      observer: {
        paymentReorged: (network) => counted.push(`reorged ${network}`),
        paymentResent: (network) => counted.push(`resent ${network}`),
        paymentReverted: (network) => counted.push(`reverted ${network}`),
      },
    });
  });

  /** A custodial send gate402 signed, confirmed at the chain's next slot; its "wire bytes" are its signature. */
  async function confirmedSend(overrides: Partial<PaymentRecord> = {}): Promise<PaymentRecord> {
    const signature = `sig-${Math.random().toString(36).slice(2)}`;
    const slot = chain.land(signature);
    const payment = aTestPayment(Date.now(), buyer, {
      signature,
      slot,
      blockHeight: slot,
      signedTransaction: Buffer.from(signature).toString('base64'),
      lastValidBlockHeight: slot + 150n,
      confirmedAt: Date.now(),
      ...overrides,
    });
    await ledger.record(payment);
    return payment;
  }

  /** The seller's receipt of `send` (POST /payment/receive answered from it). */
  async function receiptOf(send: PaymentRecord): Promise<PaymentRecord> {
    const receipt = aTestPayment(Date.now(), seller, {
      direction: 'received',
      walletAddress: 'OTHER',
      signature: send.signature,
      slot: send.slot,
      blockHeight: send.slot,
      sourcePaymentId: send.id,
      confirmedAt: Date.now(),
    });
    await ledger.record(receipt, { event: 'payment.received' });
    return receipt;
  }

  const current = async (id: string) => {
    const payment = await store.payments.get(id);
    assert.ok(payment);
    return payment;
  };
  async function typesOf(accountId: string, paymentId: string) {
    return (await store.events.listAfter(accountId, 0, 1000))
      .filter((e) => e.paymentId === paymentId)
      .map((e) => e.type);
  }

  it('resends the same signed bytes while the blockhash is valid; it lands again with the same id in a new slot, then finalizes', async () => {
    const send = await confirmedSend();
    const receipt = await receiptOf(send);
    chain.dropSlots(1n);
    chain.advance(40n); // finality passes the dropped slot: the absence is proven

    await watch.check(await current(send.id), chain);
    assert.deepEqual(chain.broadcasts, [send.signature], 'the stored bytes, once, never anything re-signed');
    // The receipt sees the send land again in the new slot.
    await watch.check(await current(receipt.id), chain);
    await watch.check(await current(send.id), chain);
    const newSlot = chain.landed.get(send.signature ?? '')?.slot;
    assert.ok(newSlot !== undefined && newSlot !== send.slot);
    for (const id of [send.id, receipt.id]) {
      const p = await current(id);
      assert.equal(p.status, 'confirmed');
      assert.equal(p.signature, send.signature);
      assert.equal(p.slot, newSlot, 'the payment keeps its id and gets the new slot');
      assert.equal(p.blockHeight, newSlot);
      assert.equal(p.error, null);
    }

    chain.advance(40n);
    await watch.check(await current(send.id), chain);
    await watch.check(await current(receipt.id), chain);
    assert.equal((await current(send.id)).status, 'finalized');
    assert.equal((await current(receipt.id)).status, 'finalized');
    assert.deepEqual(await typesOf(buyer, send.id), ['payment.finalized']);
    assert.deepEqual(await typesOf(seller, receipt.id), ['payment.received', 'payment.finalized']);
    assert.deepEqual(counted, ['reorged solana:test', 'resent solana:test']);
  });

  it("reverts a send whose blockhash has expired, with payment.reverted in the buyer's and the seller's events", async () => {
    const send = await confirmedSend();
    const receipt = await receiptOf(send);
    chain.dropSlots(1n);
    chain.advance(200n); // past lastValidBlockHeight: the bytes can never land again

    // The receipt waits while the send is confirmed; the send reverts; then the receipt follows.
    await watch.check(await current(receipt.id), chain);
    assert.equal((await current(receipt.id)).status, 'confirmed');
    await watch.check(await current(send.id), chain);
    await watch.check(await current(receipt.id), chain);

    assert.deepEqual(chain.broadcasts, [], 'nothing broadcast past its blockhash');
    for (const [accountId, id] of [
      [buyer, send.id],
      [seller, receipt.id],
    ] as const) {
      const p = await current(id);
      assert.equal(p.status, 'reverted');
      assert.match(p.error ?? '', /left the chain/);
      const events = (await store.events.listAfter(accountId, 0, 1000)).filter((e) => e.paymentId === id);
      const reverted = events.find((e) => e.type === 'payment.reverted');
      assert.equal((reverted?.data as { status?: string } | undefined)?.status, 'reverted');
    }
    assert.deepEqual(counted.sort(), [
      'reorged solana:test',
      'reorged solana:test',
      'reverted solana:test',
      'reverted solana:test',
    ]);
    // Final: nothing moves it again, whatever the chain says later.
    chain.land(send.signature ?? '');
    await watch.check(await current(send.id), chain);
    assert.equal((await current(send.id)).status, 'reverted');
  });

  it('reverts a payment it holds no signed bytes for (local mode) only once finality passed its slot', async () => {
    const local = await confirmedSend({ mode: 'local', signedTransaction: 'dW5zaWduZWQ=' });
    chain.dropSlots(1n);
    // Not found, but the chain has not finalized that far: nothing is proven yet.
    await watch.check(await current(local.id), chain);
    assert.equal((await current(local.id)).status, 'confirmed');
    assert.deepEqual(chain.broadcasts, [], 'local mode: the stored bytes are unsigned, never broadcast');
    chain.advance(40n);
    await watch.check(await current(local.id), chain);
    assert.equal((await current(local.id)).status, 'reverted');
    assert.deepEqual(await typesOf(buyer, local.id), ['payment.reverted']);
  });

  it('a node that lags (older finalized slot, transaction unknown) flips nothing: confirmed stays, finalized is never looked at', async () => {
    const send = await confirmedSend({ mode: 'local', signedTransaction: null });
    chain.advance(40n);
    chain.lagging = { finalized: (send.slot ?? 0n) - 1n };
    for (let i = 0; i < 3; i++) await watch.check(await current(send.id), chain);
    assert.equal((await current(send.id)).status, 'confirmed');

    chain.lagging = undefined;
    await watch.check(await current(send.id), chain);
    assert.equal((await current(send.id)).status, 'finalized');
    // The block is then gone on some node (or the node lags behind it): a finalized payment is final.
    chain.dropSlots(100n);
    await watch.check(await current(send.id), chain);
    assert.equal((await current(send.id)).status, 'finalized');
    assert.deepEqual(counted, []);
  });

  it('keeps resending bytes a node refuses while they are valid, noted on the payment; reverts once they expire', async () => {
    const send = await confirmedSend();
    chain.dropSlots(1n);
    chain.advance(40n);
    chain.onBroadcast = 'refuse';
    await watch.check(await current(send.id), chain);
    await watch.check(await current(send.id), chain);
    assert.equal(chain.broadcasts.length, 2);
    const resending = await current(send.id);
    assert.equal(resending.status, 'confirmed');
    assert.equal(resending.error, RESENDING_NOTE);
    chain.advance(200n);
    await watch.check(await current(send.id), chain);
    assert.equal((await current(send.id)).status, 'reverted');
    assert.deepEqual(counted, ['reorged solana:test', 'resent solana:test', 'reverted solana:test']);
  });

  it("resends an x402 settlement's stored bytes (the facilitator signed them as fee payer); the seller's payment gets the new slot", async () => {
    const settled = await confirmedSend({
      accountId: seller,
      direction: 'received',
      mode: 'facilitator',
      walletAddress: 'OTHER',
      signedTransaction: null,
      lastValidBlockHeight: null,
    });
    const settlementBytes = Buffer.from(settled.signature ?? '').toString('base64');
    const settlement: SettlementRecord = {
      key: `solana:test:${settled.signature}`,
      network: 'solana:test',
      payer: 'BUYER',
      payTo: 'OTHER',
      asset: 'MINT',
      amount: settled.amount,
      transactionId: settled.signature ?? '',
      signedTransaction: settlementBytes,
      lastValidBlockHeight: (settled.slot ?? 0n) + 150n,
      status: 'settled',
      error: null,
      paymentId: settled.id,
      createdAt: settled.createdAt,
      updatedAt: settled.createdAt,
    };
    const settlements = {
      findByPayment: async (paymentId: string) => (paymentId === settled.id ? settlement : undefined),
    };
    const withSettlements = new FinalityWatch({
      payments: store.payments,
      ledger,
      now: Date.now,
      settlements,
    });
    chain.dropSlots(1n);
    await withSettlements.check(await current(settled.id), chain);
    assert.deepEqual(chain.broadcasts, [settled.signature]);
    await withSettlements.check(await current(settled.id), chain);
    const p = await current(settled.id);
    assert.equal(p.status, 'confirmed');
    assert.equal(p.slot, chain.landed.get(settled.signature ?? '')?.slot);
    assert.notEqual(p.slot, settled.slot);
  });

  it('a node whose status cache forgot an old signature: its ledger has the transaction, so it is finalized, not reverted', async () => {
    const local = await confirmedSend({ mode: 'local', signedTransaction: null });
    chain.advance(400n);
    chain.statusesSince = chain.slot - 150n;
    await watch.check(await current(local.id), chain);
    const p = await current(local.id);
    assert.equal(p.status, 'finalized');
    assert.equal(p.slot, local.slot);
    assert.deepEqual(counted, [], 'nothing was gone');
  });

  it('reverts a send that landed again and failed this time: it paid nothing', async () => {
    const send = await confirmedSend();
    chain.dropSlots(1n);
    chain.onBroadcast = 'fail';
    await watch.check(await current(send.id), chain);
    await watch.check(await current(send.id), chain);
    const p = await current(send.id);
    assert.equal(p.status, 'reverted');
    assert.match(p.error ?? '', /landed again, failed/);
  });
});
