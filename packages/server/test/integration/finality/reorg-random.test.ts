import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Address, createSolanaRpc } from '@solana/kit';
import type { Hex } from 'viem';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import type { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { countingReconciler } from '../../support/counting-reconciler.ts';
import { newEvmLocalWallet, signEvm } from '../../support/evm-local-signer.ts';
import { ETH, type EvmPaymentFixture, startEvmPaymentFixture } from '../../support/evm-payment-fixture.ts';
import { type FamilyPaymentFixture, onEvm, onSolana } from '../../support/family-fixtures.ts';
import { signAndBroadcast } from '../../support/local-signer.ts';
import type { Party } from '../../support/party.ts';
import { LAMPORTS, type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';
import { until } from '../../support/until.ts';

/** Bounded: this many random steps per run, each a send, a reorg, an idle spell or a reconciler pass. */
const STEPS = 40;
const SEED = Number(process.env.REORG_SEED ?? Date.now() % 1_000_000);

/** mulberry32: a seeded generator; REORG_SEED replays a run's actions (Solana's drop sizes follow the slot clock). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** One step of a run: a custodial send, a local-mode send, a reorg, the chain idling, a reconciler pass. */
type Move = 'custodial' | 'local' | 'reorg' | 'idle' | 'pass';

/** Where a transaction is in the chain now, or undefined when it is not (or did not succeed). */
type InChain = { readonly slot: bigint; readonly finalized: boolean } | undefined;

/**
 * Random rounds on one chain family. How the chain is reorganised (a slot drop, anvil_rollback), how it
 * idles and finalizes, and how a local-mode caller signs and broadcasts once are the family's; the
 * rules checked after every pass and at the end are the same.
 */
interface RandomReorgFamily<F> {
  readonly name: string;
  /** What a move is drawn from: a run with the same seed draws the same moves as before the fold. */
  readonly moves: readonly Move[];
  /** Statuses that must have moved on once the chain finalized every payment. */
  readonly open: readonly string[];
  /**
   * Whether every run must reorg a confirmed payment: Solana's drops aim at a recent payment's slot;
   * anvil's rollbacks of the newest 1-3 blocks are blind.
   */
  readonly mustReorg: boolean;
  start(): Promise<F & { close(): Promise<void> }>;
  shared(raw: F): FamilyPaymentFixture;
  /** A wallet of the caller's own, funded, whose `payOnce` signs and broadcasts a built transaction once. */
  localPayer(raw: F): Promise<{ address: string; payOnce(transaction: string): Promise<void> }>;
  /** Waits until the funding so far can never be reorganised away. */
  settleFunding(raw: F): Promise<void>;
  /** Reorganises the chain; `recent` are the run's payments, newest last. */
  reorg(raw: F, rng: () => number, recent: PaymentRecord[]): Promise<void>;
  /** Lets the chain go on a little (a pause, empty blocks). */
  idle(raw: F, rng: () => number): Promise<void>;
  /** Lets the chain go on towards finality at the end. */
  moveOn(raw: F): Promise<void>;
  /** Whether the chain has finalized past everything there was at `newest` (a slot or block). */
  finalizedPast(raw: F, newest: bigint): Promise<boolean>;
  newest(raw: F): Promise<bigint>;
  where(raw: F, signature: string): Promise<InChain>;
  /** The balance the chain holds final. */
  finalBalance(raw: F, address: string): Promise<bigint>;
}

function randomReorgs<F>(family: RandomReorgFamily<F>): void {
  describe(`random reorgs on ${family.name} (REORG_SEED=${SEED})`, () => {
    let raw: F & { close(): Promise<void> };
    let f: FamilyPaymentFixture;
    let buyer: Party;
    let seller: Party;
    let payer: { address: string; payOnce(transaction: string): Promise<void> };
    let reconciler: PaymentReconciler;
    let reorgCounts: () => Promise<Record<string, number>>;
    const ids: string[] = [];
    let sellerStart: bigint;

    before(async () => {
      raw = await family.start();
      f = family.shared(raw);
      buyer = await f.party(5n * f.family.unit);
      seller = await f.party();
      payer = await family.localPayer(raw);
      await family.settleFunding(raw);
      sellerStart = await family.finalBalance(raw, seller.wallet);
      ({ reconciler, reorgCounts } = countingReconciler(f.gw, 'random-reorg-worker'));
    });
    after(() => raw.close());

    const payments = async () =>
      (await Promise.all(ids.map((id) => f.gw.store.payments.get(id)))).filter(
        (p): p is PaymentRecord => p !== undefined,
      );

    /** No payment says finalized (or, with `all`, confirmed) about a transaction the chain does not hold there. */
    async function assertTruthful(all: boolean, step: string): Promise<void> {
      for (const p of await payments()) {
        if (p.status !== 'finalized' && !(all && p.status === 'confirmed')) continue;
        const at = await family.where(raw, p.signature ?? '');
        assert.ok(at, `${step}: ${p.id} is ${p.status} but ${p.signature} is not in the chain`);
        assert.equal(at.slot, p.slot, `${step}: ${p.id} names slot (block) ${p.slot}`);
        if (p.status === 'finalized') assert.ok(at.finalized, `${step}: ${p.id} is final on the chain too`);
      }
    }

    it('never leaves a payment finalized whose transaction is not in the chain, and settles every one', async () => {
      const rng = random(SEED);
      const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
      for (let step = 0; step < STEPS; step++) {
        const move = pick(family.moves);
        const amount = Number((0.001 * (1 + Math.floor(rng() * 9))).toFixed(3));
        if (move === 'custodial') {
          const sent = await f.post(buyer.key, '/payment/send', {
            walletAddress: buyer.wallet,
            recipientAddress: seller.wallet,
            amount,
          });
          assert.equal(sent.statusCode, 200, sent.body);
          ids.push(sent.json().paymentId);
        } else if (move === 'local') {
          const built = await f.post(buyer.key, '/transaction/send', {
            walletAddress: payer.address,
            recipientAddress: seller.wallet,
            amount,
          });
          assert.equal(built.statusCode, 200, built.body);
          const b = built.json();
          ids.push(b.paymentId);
          // The caller broadcasts once and never again.
          await payer.payOnce(b.transaction);
        } else if (move === 'reorg') {
          await family.reorg(raw, rng, await payments());
        } else if (move === 'idle') {
          await family.idle(raw, rng);
        } else {
          await reconciler.runOnce();
          await assertTruthful(false, `step ${step}`);
        }
      }

      // The chain goes on and finalizes everything; the reconciler settles what is left.
      const newest = await family.newest(raw);
      for (let round = 0; round < 20; round++) {
        await reconciler.runOnce();
        await family.moveOn(raw);
        await reconciler.runOnce();
        await reconciler.runOnce();
        const open = (await payments()).filter((p) => family.open.includes(p.status));
        if (open.length === 0 && (await family.finalizedPast(raw, newest))) break;
      }
      await assertTruthful(true, 'end');
      const all = await payments();
      assert.equal(all.length, ids.length);
      const stuck = all.filter((p) => family.open.includes(p.status));
      assert.deepEqual(
        stuck.map((p) => `${p.id} ${p.status}`),
        [],
        'every payment settled once the chain finalized',
      );
      for (const p of all.filter((p) => p.status === 'reverted')) {
        for (const signature of [p.signature ?? '', ...(p.replacedSignatures ?? [])])
          assert.equal(
            await family.where(raw, signature),
            undefined,
            `${p.id} is reverted but ${signature} is in the chain`,
          );
      }
      // Paid exactly what the finalized payments say: nothing reverted paid, nothing finalized is missing.
      const finalized = all.filter((p) => p.status === 'finalized').reduce((sum, p) => sum + p.amount, 0n);
      await until('the seller balance finalized', () => family.finalizedPast(raw, newest));
      assert.equal(await family.finalBalance(raw, seller.wallet), sellerStart + finalized);
      const counts = new Map<string, number>();
      for (const p of all) counts.set(p.status, (counts.get(p.status) ?? 0) + 1);
      for (const [outcome, n] of Object.entries(await reorgCounts())) counts.set(outcome, n);
      console.log(`${family.name} REORG_SEED=${SEED}: ${JSON.stringify(Object.fromEntries(counts))}`);
      // Not vacuous: the rounds did take confirmed payments out of the chain.
      if (family.mustReorg)
        assert.ok((counts.get('reorged') ?? 0) > 0, 'at least one confirmed payment was reorged');
    });
  });
}

/** Finality trails the newest slot by this many slots (20 ms each): drops stay above it, as on a cluster. */
const FINALIZED_DEPTH = 40;

// Solana: the localnet's test hook drops slots, from a recent payment's slot or just the newest 1-3.
randomReorgs<PaymentFixture & { dropped: Set<number> }>({
  name: 'the localnet',
  moves: ['custodial', 'local', 'reorg', 'reorg', 'idle', 'pass', 'pass'],
  open: ['pending', 'submitted', 'confirmed'],
  mustReorg: true,
  start: async () => {
    const f = await startPaymentFixture({
      chain: { testHooks: true, slotMs: 20, finalizedDepth: FINALIZED_DEPTH },
    });
    /** Slot numbers dropped so far: the chain never uses them again. */
    return Object.assign(f, { dropped: new Set<number>() });
  },
  shared: onSolana,
  localPayer: async (f) => {
    const payer = generateSolanaKeypair();
    f.chain.localnet.airdrop(payer.address, 5n * LAMPORTS);
    await until('the payer funded', async () => (await f.chain.adapter.getBalance(payer.address)) > 0n);
    return {
      address: payer.address,
      payOnce: async (transaction) => {
        await signAndBroadcast(f.chain.localnet.rpcUrl, transaction, payer.secretKey).catch(() => undefined);
      },
    };
  },
  // The parties' funding must be final before anything is dropped, so no drop can take it back.
  settleFunding: async (f) => {
    const funded = BigInt(f.chain.localnet.slot);
    await until('the funding finalized', async () => (await f.chain.adapter.finalizedSlot()) > funded);
  },
  reorg: async ({ chain: { localnet }, dropped }, rng, payments) => {
    const candidates = payments.filter((p) => p.slot !== null).slice(-3);
    // From here synchronous: the slot clock cannot move between reading the slots and dropping.
    // Slots from `from` to the newest ended one, less the numbers earlier drops left unused.
    const blocksFrom = (from: number) =>
      localnet.slot - from - [...dropped].filter((slot) => slot >= from).length;
    // Finality trails the newest block by FINALIZED_DEPTH; a drop stays clear of it, as on a cluster.
    const recent = candidates.filter((p) => blocksFrom(Number(p.slot)) < FINALIZED_DEPTH - 2);
    // From a recent payment's slot (the reorg that matters), else the newest 1-3 slots.
    const count =
      recent.length > 0
        ? blocksFrom(Number(recent[Math.floor(rng() * recent.length)]?.slot))
        : 1 + Math.floor(rng() * 3);
    if (count > 0) for (const slot of localnet.dropSlots(count)) dropped.add(slot);
  },
  idle: (_f, rng) => new Promise((resolve) => setTimeout(resolve, Math.floor(rng() * 200))),
  moveOn: () => new Promise((resolve) => setTimeout(resolve, 300)),
  finalizedPast: async (f, newest) => (await f.chain.adapter.finalizedSlot()) > newest,
  newest: async (f) => BigInt(f.chain.localnet.slot),
  where: async (f, signature) => {
    const outcome = await f.chain.adapter.getSignatureStatus(signature);
    if (!outcome || outcome.status === 'failed' || !('slot' in outcome)) return undefined;
    return { slot: outcome.slot, finalized: outcome.status === 'finalized' };
  },
  finalBalance: async (f, address) =>
    (
      await createSolanaRpc(f.chain.localnet.rpcUrl)
        .getBalance(address as Address, { commitment: 'finalized' })
        .send()
    ).value,
});

/** Rollbacks stay shallower than anvil's finality (64 blocks), as a real chain's reorgs do. */
const MAX_DEPTH = 3;

// EVM: anvil_rollback of the newest 1-3 blocks, never below the parties' funding.
randomReorgs<EvmPaymentFixture & { floor: bigint }>({
  name: 'anvil',
  moves: ['custodial', 'local', 'reorg', 'idle', 'pass', 'pass'],
  open: ['submitted', 'confirmed'],
  mustReorg: false,
  start: async () =>
    Object.assign(await startEvmPaymentFixture({ gateway: { confirmTimeoutMs: 300 } }), { floor: 0n }),
  shared: onEvm,
  localPayer: async (f) => {
    const payer = newEvmLocalWallet();
    await f.chain.faucet?.fundNative(payer.address, 10n * ETH);
    return {
      address: payer.address,
      // A nonce the chain no longer expects is refused.
      payOnce: async (transaction) => {
        const signed = await signEvm(transaction, payer.privateKey);
        await f.anvil.sendRawTransaction({ serializedTransaction: signed }).catch(() => undefined);
      },
    };
  },
  // Nothing below this block is ever rolled back: the parties' funding stays.
  settleFunding: async (f) => {
    f.floor = await f.anvil.getBlockNumber();
  },
  reorg: async (f, rng) => {
    const latest = await f.anvil.getBlockNumber();
    const depth = Math.min(1 + Math.floor(rng() * MAX_DEPTH), Number(latest - f.floor));
    if (depth > 0)
      await f.anvil.request({ method: 'anvil_rollback', params: [depth] } as never as {
        method: 'anvil_mine';
        params: [Hex, Hex];
      });
  },
  idle: async (f, rng) => {
    await f.anvil.mine({ blocks: 1 + Math.floor(rng() * 5) });
  },
  moveOn: async (f) => {
    await f.anvil.mine({ blocks: 70 });
  },
  finalizedPast: async (f, newest) => (await f.chain.finalizedSlot()) > newest,
  newest: (f) => f.anvil.getBlockNumber(),
  where: async (f, hash) => {
    const receipt = await f.anvil.getTransactionReceipt({ hash: hash as Hex }).then(
      (r) => r,
      () => undefined,
    );
    if (receipt === undefined) return undefined;
    assert.equal(receipt.status, 'success');
    const status = await f.chain.getSignatureStatus(hash);
    return { slot: receipt.blockNumber, finalized: status?.status === 'finalized' };
  },
  finalBalance: (f, address) => f.chain.getBalance(address),
});
