import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Address, createSolanaRpc } from '@solana/kit';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import { GatewayMetrics } from '../../../src/metrics/gateway-metrics.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { signAndBroadcast } from '../../support/local-signer.ts';
import {
  LAMPORTS,
  type Party,
  type PaymentFixture,
  startPaymentFixture,
} from '../../support/payment-fixture.ts';

/** Bounded: this many random steps per run, each a send, a slot drop, a pause or a reconciler pass. */
const STEPS = 40;
/** Finality trails the newest slot by this many slots (20 ms each): drops stay above it, as on a cluster. */
const FINALIZED_DEPTH = 40;
/** States that must have moved on once the chain finalized past every payment and its blockhash. */
const OPEN: readonly string[] = ['pending', 'submitted', 'confirmed'];
const SEED = Number(process.env.REORG_SEED ?? Date.now() % 1_000_000);

/** mulberry32: a seeded generator; REORG_SEED replays a run's actions (drop sizes follow the slot clock). */
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

/**
 * Random sequences of custodial sends, local-mode sends (broadcast once by their caller), dropped
 * slots (the localnet's test hook, from a recent payment's slot or just the newest 1-3), pauses and
 * reconciler passes on the embedded Solana chain. After every pass and at the end: no payment is
 * `finalized` whose transaction is not in the chain at the slot it names; at the end, once the chain
 * has finalized everything, every payment is `finalized` (in the chain) or `reverted` (not in it), and
 * the seller's balance grew by exactly the finalized payments.
 */
describe(`random reorgs on the localnet (REORG_SEED=${SEED})`, () => {
  let f: PaymentFixture;
  let buyer: Party;
  let seller: Party;
  let reconciler: PaymentReconciler;
  const metrics = new GatewayMetrics();
  const payer = generateSolanaKeypair();
  const ids: string[] = [];
  /** Slot numbers dropped so far: the chain never uses them again. */
  const dropped = new Set<number>();
  let sellerStart: bigint;

  const rpc = () => createSolanaRpc(f.chain.localnet.rpcUrl);
  const finalizedBalance = async (address: string) =>
    (
      await rpc()
        .getBalance(address as Address, { commitment: 'finalized' })
        .send()
    ).value;
  const confirmedBalance = async (address: string) =>
    (
      await rpc()
        .getBalance(address as Address, { commitment: 'confirmed' })
        .send()
    ).value;
  async function until(what: string, condition: () => Promise<boolean>, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  const payments = async () =>
    (await Promise.all(ids.map((id) => f.gw.store.payments.get(id)))).filter(
      (p): p is PaymentRecord => p !== undefined,
    );

  before(async () => {
    f = await startPaymentFixture({
      chain: { testHooks: true, slotMs: 20, finalizedDepth: FINALIZED_DEPTH },
    });
    buyer = await f.party(5);
    seller = await f.party(0);
    f.chain.localnet.airdrop(payer.address, 5n * LAMPORTS);
    await until('the payer funded', async () => (await confirmedBalance(payer.address)) > 0n);
    // The parties' funding must be final before anything is dropped, so no drop can take it back.
    const funded = BigInt(f.chain.localnet.slot);
    await until('the funding finalized', async () => (await f.chain.adapter.finalizedSlot()) > funded);
    sellerStart = await finalizedBalance(seller.wallet);
    reconciler = new PaymentReconciler({
      store: f.gw.store,
      networks: f.gw.networks,
      ledger: f.gw.services.ledger,
      wallets: f.gw.services.wallets,
      instanceId: 'solana-random-reorg-worker',
      recheckMs: 0,
      finality: metrics,
    });
  });
  after(() => f.close());

  /** No payment says finalized (or, with `all`, confirmed) about a transaction the chain does not hold there. */
  async function assertTruthful(all: boolean, step: string): Promise<void> {
    for (const p of await payments()) {
      if (p.status !== 'finalized' && !(all && p.status === 'confirmed')) continue;
      const outcome = await f.chain.adapter.getSignatureStatus(p.signature ?? '');
      assert.ok(
        outcome && outcome.status !== 'failed' && 'slot' in outcome,
        `${step}: ${p.id} is ${p.status} but ${p.signature} is not in the chain`,
      );
      assert.equal(outcome.slot, p.slot, `${step}: ${p.id} names slot ${p.slot}`);
      if (p.status === 'finalized') assert.equal(outcome.status, 'finalized', `${step}: ${p.id}`);
    }
  }

  it('never leaves a payment finalized whose transaction is not in the chain, and settles every one', async () => {
    const rng = random(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
    for (let step = 0; step < STEPS; step++) {
      const action = pick(['custodial', 'local', 'drop', 'drop', 'wait', 'pass', 'pass'] as const);
      const amount = Number((0.001 * (1 + Math.floor(rng() * 9))).toFixed(3));
      if (action === 'custodial') {
        const sent = await f.post(buyer.key, '/payment/send', {
          walletAddress: buyer.wallet,
          recipientAddress: seller.wallet,
          amount,
        });
        assert.equal(sent.statusCode, 200, sent.body);
        ids.push(sent.json().paymentId);
      } else if (action === 'local') {
        const built = await f.post(buyer.key, '/transaction/send', {
          walletAddress: payer.address,
          recipientAddress: seller.wallet,
          amount,
        });
        assert.equal(built.statusCode, 200, built.body);
        const b = built.json();
        ids.push(b.paymentId);
        // The caller broadcasts once and never again.
        await signAndBroadcast(f.chain.localnet.rpcUrl, b.transaction, payer.secretKey).catch(
          () => undefined,
        );
      } else if (action === 'drop') {
        const localnet = f.chain.localnet;
        const candidates = (await payments()).filter((p) => p.slot !== null).slice(-3);
        // From here synchronous: the slot clock cannot move between reading the slots and dropping.
        // Slots from `from` to the newest ended one, less the numbers earlier drops left unused.
        const blocksFrom = (from: number) =>
          localnet.slot - from - [...dropped].filter((slot) => slot >= from).length;
        // Finality trails the newest block by FINALIZED_DEPTH; a drop stays clear of it, as on a cluster.
        const recent = candidates.filter((p) => blocksFrom(Number(p.slot)) < FINALIZED_DEPTH - 2);
        // From a recent payment's slot (the reorg that matters), else the newest 1-3 slots.
        const count = recent.length > 0 ? blocksFrom(Number(pick(recent).slot)) : 1 + Math.floor(rng() * 3);
        if (count > 0) for (const slot of localnet.dropSlots(count)) dropped.add(slot);
      } else if (action === 'wait') {
        await new Promise((resolve) => setTimeout(resolve, Math.floor(rng() * 200)));
      } else {
        await reconciler.runOnce();
        await assertTruthful(false, `step ${step}`);
      }
    }

    // The chain goes on and finalizes everything; the reconciler settles what is left.
    const newest = BigInt(f.chain.localnet.slot);
    for (let round = 0; round < 20; round++) {
      await reconciler.runOnce();
      await new Promise((resolve) => setTimeout(resolve, 300));
      await reconciler.runOnce();
      const open = (await payments()).filter((p) => OPEN.includes(p.status));
      if (open.length === 0 && (await f.chain.adapter.finalizedSlot()) > newest) break;
    }
    await assertTruthful(true, 'end');
    const all = await payments();
    assert.equal(all.length, ids.length);
    const stuck = all.filter((p) => OPEN.includes(p.status));
    assert.deepEqual(
      stuck.map((p) => `${p.id} ${p.status}`),
      [],
      'every payment settled once the chain finalized',
    );
    for (const p of all.filter((p) => p.status === 'reverted')) {
      for (const signature of [p.signature ?? '', ...(p.replacedSignatures ?? [])])
        assert.equal(
          await f.chain.adapter.getSignatureStatus(signature),
          undefined,
          `${p.id} is reverted but ${signature} is in the chain`,
        );
    }
    // Paid exactly what the finalized payments say: nothing reverted paid, nothing finalized is missing.
    const finalized = all.filter((p) => p.status === 'finalized').reduce((sum, p) => sum + p.amount, 0n);
    await until('the seller balance finalized', async () => (await f.chain.adapter.finalizedSlot()) > newest);
    assert.equal(await finalizedBalance(seller.wallet), sellerStart + finalized);
    const counts = new Map<string, number>();
    for (const p of all) counts.set(p.status, (counts.get(p.status) ?? 0) + 1);
    const watched = await metrics.registry.getSingleMetric('gate402_payment_reorgs_total')?.get();
    for (const v of watched?.values ?? []) if (v.value > 0) counts.set(String(v.labels.outcome), v.value);
    console.log(`REORG_SEED=${SEED}: ${JSON.stringify(Object.fromEntries(counts))}`);
    // Not vacuous: the rounds did take confirmed payments out of the chain.
    assert.ok((counts.get('reorged') ?? 0) > 0, 'at least one confirmed payment was reorged');
  });
});
