import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Hex } from 'viem';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import type { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { newEvmLocalWallet, signEvm } from '../../support/evm-local-signer.ts';
import {
  ETH,
  type EvmParty,
  type EvmPaymentFixture,
  startEvmPaymentFixture,
} from '../../support/evm-payment-fixture.ts';

/** Bounded: this many random steps per run, each a send, a rollback, blocks or a reconciler pass. */
const STEPS = 40;
/** Rollbacks stay shallower than anvil's finality (64 blocks), as a real chain's reorgs do. */
const MAX_DEPTH = 3;
const SEED = Number(process.env.REORG_SEED ?? Date.now() % 1_000_000);

/** mulberry32: a seeded generator, so a failing run can be replayed with REORG_SEED. */
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
 * Random sequences of custodial sends, local-mode sends, rollbacks (anvil_rollback, 1-3 blocks),
 * empty blocks and reconciler passes on a real anvil. After every pass and at the end: no payment is
 * `finalized` whose transaction is not in the chain in the block it names; at the end, after the chain
 * finalized everything, every payment that was confirmed is `finalized` (in the chain) or `reverted`
 * (not in it), and the seller's balance grew by exactly the finalized payments.
 */
describe(`random reorgs on anvil (REORG_SEED=${SEED})`, () => {
  let f: EvmPaymentFixture;
  let buyer: EvmParty;
  let seller: EvmParty;
  let reconciler: PaymentReconciler;
  const payer = newEvmLocalWallet();
  const ids: string[] = [];
  let floor: bigint;
  let sellerStart: bigint;

  before(async () => {
    f = await startEvmPaymentFixture({ gateway: { confirmTimeoutMs: 300 } });
    buyer = await f.party(10n * ETH);
    seller = await f.party();
    await f.chain.faucet?.fundNative(payer.address, 10n * ETH);
    reconciler = f.reconciler('random-reorg-worker');
    // Nothing below this block is ever rolled back: the parties' funding stays.
    floor = await f.anvil.getBlockNumber();
    sellerStart = await f.chain.getBalance(seller.wallet);
  });
  after(() => f.close());

  const payments = async () =>
    (await Promise.all(ids.map((id) => f.gw.store.payments.get(id)))).filter(
      (p): p is PaymentRecord => p !== undefined,
    );
  const receiptOf = (hash: string) =>
    f.anvil.getTransactionReceipt({ hash: hash as Hex }).then(
      (r) => r,
      () => undefined,
    );

  /** No payment says finalized (or, with `all`, confirmed) about a transaction the chain does not hold there. */
  async function assertTruthful(all: boolean, step: string): Promise<void> {
    for (const p of await payments()) {
      if (p.status !== 'finalized' && !(all && p.status === 'confirmed')) continue;
      const receipt = await receiptOf(p.signature ?? '');
      assert.ok(receipt, `${step}: ${p.id} is ${p.status} but ${p.signature} is not in the chain`);
      assert.equal(receipt.status, 'success');
      assert.equal(receipt.blockNumber, p.slot, `${step}: ${p.id} names block ${p.slot}`);
    }
  }

  it('never leaves a payment finalized whose transaction is not in the chain, and settles every one', async () => {
    const rng = random(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
    for (let step = 0; step < STEPS; step++) {
      const action = pick(['custodial', 'local', 'rollback', 'mine', 'pass', 'pass'] as const);
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
        const signed = await signEvm(b.transaction, payer.privateKey);
        // The caller broadcasts once and never again; a nonce the chain no longer expects is refused.
        await f.anvil.sendRawTransaction({ serializedTransaction: signed }).catch(() => undefined);
      } else if (action === 'rollback') {
        const latest = await f.anvil.getBlockNumber();
        const depth = Math.min(1 + Math.floor(rng() * MAX_DEPTH), Number(latest - floor));
        if (depth > 0)
          await f.anvil.request({ method: 'anvil_rollback', params: [depth] } as never as {
            method: 'anvil_mine';
            params: [Hex, Hex];
          });
      } else if (action === 'mine') {
        await f.anvil.mine({ blocks: 1 + Math.floor(rng() * 5) });
      } else {
        await reconciler.runOnce();
        await assertTruthful(false, `step ${step}`);
      }
    }

    // The chain goes on and finalizes everything; the reconciler settles what is left.
    for (let round = 0; round < 8; round++) {
      await reconciler.runOnce();
      await f.anvil.mine({ blocks: 70 });
      await reconciler.runOnce();
      await reconciler.runOnce();
      const open = (await payments()).filter((p) => ['submitted', 'confirmed'].includes(p.status));
      if (open.length === 0) break;
    }
    await assertTruthful(true, 'end');
    const all = await payments();
    const stuck = all.filter((p) => p.status === 'submitted' || p.status === 'confirmed');
    assert.deepEqual(
      stuck.map((p) => `${p.id} ${p.status}`),
      [],
      'every payment settled once the chain finalized',
    );
    for (const p of all.filter((p) => p.status === 'reverted')) {
      for (const hash of [p.signature ?? '', ...(p.replacedSignatures ?? [])])
        assert.equal(await receiptOf(hash), undefined, `${p.id} is reverted but ${hash} is in the chain`);
    }
    // Paid exactly what the finalized payments say: nothing reverted paid, nothing finalized is missing.
    const finalized = all.filter((p) => p.status === 'finalized').reduce((sum, p) => sum + p.amount, 0n);
    assert.equal(await f.chain.getBalance(seller.wallet), sellerStart + finalized);
    const counts = new Map<string, number>();
    for (const p of all) counts.set(p.status, (counts.get(p.status) ?? 0) + 1);
    console.log(`REORG_SEED=${SEED}: ${JSON.stringify(Object.fromEntries(counts))}`);
  });
});
