import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { createTestClient, type Hex, http, publicActions } from 'viem';
import type { ChainTransaction, ConfirmationOutcome } from '../../../src/chains/chain-adapter.ts';
import { ChainError } from '../../../src/chains/chain-error.ts';
import { EvmAdapter } from '../../../src/chains/evm/evm-adapter.ts';
import { finalityConfirmationsOf } from '../../../src/chains/evm/evm-networks.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import type { SettlementRecord } from '../../../src/domain/records/settlement-records.ts';
import { AccountService } from '../../../src/services/accounts/account-service.ts';
import { PaymentLedger } from '../../../src/services/payments/payment-ledger.ts';
import { openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { type FinalityChain, FinalityWatch, RESENDING_NOTE } from '../../../src/workers/finality-watch.ts';
import { tempSqlite } from '../../support/databases.ts';
import { startJsonRpcProxy } from '../../support/json-rpc-proxy.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { aTestPayment } from '../../support/test-payment.ts';

const ETH = 10n ** 18n;

/** What a family-only test of the suite below may use: the family's chain, a store and two accounts. */
interface FinalityContext<F> {
  readonly raw: F;
  readonly store: Store;
  readonly ledger: PaymentLedger;
  readonly buyer: string;
  readonly seller: string;
}

/**
 * The finality watch on one chain family: a confirmed payment is finalized once the chain holds it final,
 * and never flipped on the word of a node that lags. How a transaction lands, how the chain moves on and
 * how the node the gateway asks lags or loses a block are the family's.
 */
interface FinalityFamily<F> {
  readonly name: string;
  start(): Promise<F & { close(): Promise<void> }>;
  chain(raw: F): FinalityChain;
  network(raw: F): string;
  /** Lands a transaction; its signature and the slot (block number) it is in. */
  land(raw: F): Promise<{ signature: string; slot: bigint }>;
  /** The chain moves on until everything landed so far is final. */
  finalizeAll(raw: F): Promise<void>;
  /** The node the gateway asks lags: its finalized slot is `slot` and it knows no transaction after it. */
  lag(raw: F, slot: bigint): void;
  /** The node answers from the chain as it is again. */
  catchUp(raw: F): void;
  /** The newest blocks are gone on the node the gateway asks (or it holds another fork of them). */
  forget(raw: F): Promise<void>;
  /** Tests of what only this family does, on the same chain and store. */
  only(context: () => FinalityContext<F>): void;
}

/** A finality watch that writes what it did to each payment, by network, into `counted`. */
function countingWatch(store: Store, ledger: PaymentLedger, counted: string[]): FinalityWatch {
  return new FinalityWatch({
    payments: store.payments,
    ledger,
    now: Date.now,
    observer: {
      paymentReorged: (network) => counted.push(`reorged ${network}`),
      paymentResent: (network) => counted.push(`resent ${network}`),
      paymentReverted: (network) => counted.push(`reverted ${network}`),
    },
  });
}

function finalityWatchOn<F>(family: FinalityFamily<F>): void {
  describe(`finality watch on ${family.name}`, () => {
    let raw: F & { close(): Promise<void> };
    let store: Store;
    let dispose: () => Promise<void>;
    let ledger: PaymentLedger;
    let buyer: string;
    let seller: string;

    before(async () => {
      raw = await family.start();
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
      await raw.close();
    });

    it('a node that lags (older finalized slot, transaction unknown) flips nothing: confirmed stays, finalized once it catches up, and final after', async () => {
      const counted: string[] = [];
      const watch = countingWatch(store, ledger, counted);
      const chain = family.chain(raw);
      const { signature, slot } = await family.land(raw);
      const payment = aTestPayment(Date.now(), buyer, {
        mode: 'local',
        network: family.network(raw),
        signature,
        slot,
        blockHeight: slot,
        signedTransaction: null,
        lastValidBlockHeight: slot + 150n,
        confirmedAt: Date.now(),
      });
      await ledger.record(payment);
      const current = async () => (await store.payments.get(payment.id)) ?? payment;
      await family.finalizeAll(raw);

      family.lag(raw, slot - 1n);
      for (let i = 0; i < 3; i++) await watch.check(await current(), chain);
      assert.equal((await current()).status, 'confirmed');

      family.catchUp(raw);
      await watch.check(await current(), chain);
      assert.equal((await current()).status, 'finalized');
      // The block is then gone on some node (or the node lags behind it): a finalized payment is final.
      await family.forget(raw);
      await watch.check(await current(), chain);
      assert.equal((await current()).status, 'finalized');
      family.catchUp(raw);
      assert.deepEqual(counted, []);
    });

    family.only(() => ({ raw, store, ledger, buyer, seller }));
  });
}

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
      tokenTransfers: [],
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

type NodeMode = 'honest' | 'no finalized tag' | 'forked block' | 'lagging';

/**
 * A JSON-RPC proxy in front of anvil that plays a node of another kind: one without the `finalized`
 * block tag, one on another fork (every block it serves by number has another hash), or one that lags
 * (its finalized block is old and it knows no receipt).
 */
async function startNodeProxy(target: string) {
  let mode: NodeMode = 'honest';
  const proxy = await startJsonRpcProxy(target, (call) => {
    const tag = call.params?.[0];
    if (call.method === 'eth_getBlockByNumber' && tag === 'finalized') {
      if (mode === 'no finalized tag')
        return { answer: { error: { code: -32602, message: 'unknown block tag finalized' } } };
      if (mode === 'lagging') call.params = ['0x1', ...(call.params?.slice(1) ?? [])];
    }
    if (call.method === 'eth_getTransactionReceipt' && mode === 'lagging')
      return { answer: { result: null } };
    if (mode !== 'forked block' || call.method !== 'eth_getBlockByNumber') return {};
    if (typeof tag !== 'string' || !tag.startsWith('0x')) return {};
    return {
      reshape: (json) => {
        const block = json.result as { hash?: string } | null | undefined;
        if (block?.hash !== undefined) block.hash = `0x${'ab'.repeat(32)}`;
      },
    };
  });
  return {
    ...proxy,
    set: (next: NodeMode) => {
      mode = next;
    },
  };
}

// A Solana-like fake: what it plays that the localnet cannot is a node that lags.
finalityWatchOn<{ chain: ForkableChain }>({
  name: 'a Solana-like chain (fake)',
  start: async () => ({ chain: new ForkableChain(), close: async () => {} }),
  chain: ({ chain }) => chain,
  network: () => 'solana:test',
  land: async ({ chain }) => {
    const signature = `sig-${Math.random().toString(36).slice(2)}`;
    return { signature, slot: chain.land(signature) };
  },
  finalizeAll: async ({ chain }) => chain.advance(40n),
  lag: ({ chain }, slot) => {
    chain.lagging = { finalized: slot };
  },
  catchUp: ({ chain }) => {
    chain.lagging = undefined;
  },
  forget: async ({ chain }) => chain.dropSlots(100n),
  only: (context) => {
    describe('a confirmed payment whose transaction leaves the chain', () => {
      let store: Store;
      let ledger: PaymentLedger;
      let buyer: string;
      let seller: string;
      let chain: ForkableChain;
      let watch: FinalityWatch;
      const counted: string[] = [];

      before(() => {
        ({ store, ledger, buyer, seller } = context());
      });
      beforeEach(() => {
        chain = new ForkableChain();
        counted.length = 0;
        watch = countingWatch(store, ledger, counted);
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
        assert.deepEqual(
          chain.broadcasts,
          [send.signature],
          'the stored bytes, once, never anything re-signed',
        );
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
  },
});

/** The embedded anvil, and the gateway's adapter for it reaching it through a node proxy. */
interface EvmNode {
  readonly evm: TestEvm;
  readonly proxy: Awaited<ReturnType<typeof startNodeProxy>>;
  readonly anvil: ReturnType<typeof anvilClient>;
  readonly chain: EvmAdapter;
  readonly sender: { address: string; secretKey: Uint8Array };
}

function anvilClient(url: string) {
  return createTestClient({ mode: 'anvil', transport: http(url), cacheTime: 0 }).extend(publicActions);
}

/** A transfer mined through an honest node: its hash and block. */
async function minedOn({
  proxy,
  chain,
  sender,
  evm,
  anvil,
}: EvmNode): Promise<{ hash: string; block: bigint }> {
  proxy.set('honest');
  const prepared = await chain.prepareTransfer({ from: sender.address, to: evm.operator, amount: 1_000n });
  const signed = await chain.sign(prepared, sender.secretKey);
  await chain.broadcast(signed.wire);
  const receipt = await anvil.waitForTransactionReceipt({
    hash: signed.signature as Hex,
    pollingInterval: 20,
  });
  return { hash: signed.signature, block: receipt.blockNumber };
}

// EVM: the finalized tag, N confirmations without it, and nodes that cannot be trusted, played by a
// JSON-RPC proxy in front of a real anvil.
finalityWatchOn<EvmNode>({
  name: 'EVM (anvil behind a node proxy)',
  start: async () => {
    const evm = await startTestEvm();
    const proxy = await startNodeProxy(evm.anvil.rpcUrl);
    const chain = new EvmAdapter({
      info: evm.adapter.info,
      rpcUrl: proxy.url,
      chainId: 31337, // anvil's
      pollIntervalMs: 20,
      finalityConfirmations: 5n,
    });
    const sender = await chain.generateKeypair();
    await evm.adapter.faucet?.fundNative(sender.address, ETH);
    return {
      evm,
      proxy,
      anvil: anvilClient(evm.anvil.rpcUrl),
      chain,
      sender,
      close: async () => {
        await chain.close();
        await proxy.close();
        await evm.close();
        evm.dispose();
      },
    };
  },
  chain: ({ chain }) => chain,
  network: ({ chain }) => chain.info.id,
  land: async (node) => {
    const { hash, block } = await minedOn(node);
    return { signature: hash, slot: block };
  },
  finalizeAll: async ({ anvil }) => {
    await anvil.mine({ blocks: 70 });
  },
  // The proxy's lagging node holds block 1 final and knows no receipt.
  lag: ({ proxy }) => proxy.set('lagging'),
  catchUp: ({ proxy }) => proxy.set('honest'),
  forget: async ({ proxy }) => proxy.set('forked block'),
  only: (context) => {
    let anvil: EvmNode['anvil'];
    let chain: EvmAdapter;
    let proxy: EvmNode['proxy'];
    before(() => {
      ({ anvil, chain, proxy } = context().raw);
    });
    const mined = () => minedOn(context().raw);

    it('has documented finality depths for known networks and 64 for others', () => {
      assert.deepEqual(
        [1, 11155111, 8453, 84532, 10, 42161, 137, 999].map((id) => finalityConfirmationsOf(id)),
        [64n, 64n, 900n, 900n, 900n, 4_800n, 256n, 64n],
      );
    });

    it('without the finalized tag, a block is final N confirmations deep', async () => {
      await anvil.mine({ blocks: 10 });
      const { hash, block } = await mined();
      proxy.set('no finalized tag');
      assert.equal(await chain.finalizedSlot(), (await anvil.getBlockNumber()) - 5n);
      assert.deepEqual(await chain.getSignatureStatus(hash), { status: 'confirmed', slot: block });
      await anvil.mine({ blocks: 4 });
      assert.equal((await chain.getSignatureStatus(hash))?.status, 'confirmed', '4 blocks on top are not 5');
      await anvil.mine({ blocks: 1 });
      assert.deepEqual(await chain.getSignatureStatus(hash), { status: 'finalized', slot: block });
    });

    it('a receipt whose block is not the canonical one at its height is never called finalized', async () => {
      const { hash, block } = await mined();
      await anvil.mine({ blocks: 70 });
      proxy.set('forked block');
      assert.deepEqual(await chain.getSignatureStatus(hash), { status: 'confirmed', slot: block });
      proxy.set('honest');
      assert.deepEqual(await chain.getSignatureStatus(hash), { status: 'finalized', slot: block });
    });
  },
});
