import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Hex } from 'viem';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import { newId } from '../../../src/domain/ids.ts';
import { OPEN_STATUSES } from '../../../src/domain/payment-status.ts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import { newPayment } from '../../../src/services/payments/new-payment.ts';
import { HeldRefundRelease } from '../../../src/services/payments/refunds/held-refund-release.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { newEvmLocalWallet, signAndBroadcastEvm } from '../../support/evm-local-signer.ts';
import { startEvmPaymentFixture } from '../../support/evm-payment-fixture.ts';
import { type FamilyPaymentFixture, onEvm, onSolana } from '../../support/family-fixtures.ts';
import { signAndBroadcast } from '../../support/local-signer.ts';
import type { Party } from '../../support/party.ts';
import { startPaymentFixture } from '../../support/payment-fixture.ts';
import { until } from '../../support/until.ts';

/**
 * Refunds of a payment that is `confirmed` but not yet `finalized` (#30, review-30): accepted and counted
 * at once, but their transaction is held — nothing signed, no nonce, nothing broadcast — until the
 * payment is final; then sent, exactly once, by whichever reconciler gets there. A reorganisation that
 * takes the payment off the chain cancels the held refund with nothing sent. Real chains (the embedded
 * Solana localnet with its reorg hook, anvil with anvil_rollback), real SQLite file and PostgreSQL.
 */
const USDC = 1_000_000n;
/** Solana slots before finality: far enough that a test sees the payment confirmed, not final. */
const FINALIZED_DEPTH = 150;

interface Chain {
  readonly f: FamilyPaymentFixture;
  readonly adapter: ChainAdapter;
  /** Moves the chain's finality past everything mined so far. */
  finalizeAll(): Promise<void>;
  /** Takes the newest block (Solana: the slots from `payment`'s on) out of the chain. */
  dropBlockOf(payment: PaymentRecord): Promise<void>;
  /** A payer of its own (no gateway key), funded, that signs a built transaction and broadcasts it. */
  localPayer(): Promise<{ address: string; pay(transaction: string): Promise<string> }>;
  /** How many transactions `address` has sent (EVM nonce), or undefined on Solana. */
  sentCount(address: string): Promise<number | undefined>;
  close(): Promise<void>;
}

const storages: { name: string; skip: string | false; make(): Promise<TempStorage> }[] = [
  { name: 'SQLite file', skip: false, make: async () => tempSqlite() },
  { name: 'PostgreSQL', skip: SKIP_POSTGRES, make: tempPostgres },
];

const families: { name: string; start(storage: TempStorage): Promise<Chain> }[] = [
  {
    name: 'Solana localnet',
    start: async (storage) => {
      const raw = await startPaymentFixture({
        chain: { testHooks: true, slotMs: 20, finalizedDepth: FINALIZED_DEPTH },
        gateway: { storage },
      });
      const { adapter, localnet } = raw.chain;
      return {
        f: onSolana(raw),
        adapter,
        finalizeAll: async () => {
          const now = BigInt(localnet.slot);
          // The 150 slots to finality at once, as anvil mines its 70: waiting them out took 3 s of 20 ms
          // slots per call, far more on a loaded machine. Nothing signed before a call is still to be sent
          // after it (held refunds are signed once their payment is final), so no blockhash goes stale.
          localnet.advanceSlots(FINALIZED_DEPTH);
          await until('finality past now', async () => (await adapter.finalizedSlot()) >= now, 60_000);
        },
        dropBlockOf: async (payment) => {
          const dropped = localnet.dropSlots(localnet.slot - Number(payment.slot));
          assert.equal(dropped[0], Number(payment.slot));
        },
        localPayer: async () => {
          const payer = generateSolanaKeypair();
          localnet.airdrop(payer.address, 1_000_000_000n);
          await until('the payer funded', async () => (await adapter.getBalance(payer.address)) > 0n);
          return {
            address: payer.address,
            pay: (transaction) => signAndBroadcast(localnet.rpcUrl, transaction, payer.secretKey),
          };
        },
        sentCount: async () => undefined,
        close: () => raw.close(),
      };
    },
  },
  {
    name: 'anvil',
    start: async (storage) => {
      const raw = await startEvmPaymentFixture({ gateway: { storage } });
      return {
        f: onEvm(raw),
        adapter: raw.chain,
        // anvil has no block time and calls a block final 64 deep.
        finalizeAll: () => raw.anvil.mine({ blocks: 70 }),
        dropBlockOf: async (payment) => {
          assert.equal(await raw.anvil.getBlockNumber(), payment.slot, 'the payment is in the newest block');
          await raw.anvil.request({ method: 'anvil_rollback', params: [1] } as never as {
            method: 'anvil_mine';
            params: [Hex, Hex];
          });
          await raw.anvil.mine({ blocks: 3 });
        },
        localPayer: async () => {
          const payer = newEvmLocalWallet();
          await raw.chain.faucet?.fundNative(payer.address, 10n ** 18n);
          return {
            address: payer.address,
            pay: (transaction) => signAndBroadcastEvm(raw.evm.anvil.rpcUrl, transaction, payer.privateKey),
          };
        },
        sentCount: (address) => raw.anvil.getTransactionCount({ address: address as Hex }),
        close: () => raw.close(),
      };
    },
  },
];

/** The suites on one chain family (a file each, so each file stays within the test runner's time limit). */
export function heldRefundSuites(familyName: 'Solana localnet' | 'anvil'): void {
  for (const storage of storages) {
    for (const family of families.filter((f) => f.name === familyName)) {
      describe(`held refunds on ${family.name}, ${storage.name}`, {
        skip: storage.skip,
        timeout: 600_000,
      }, () => {
        let c: Chain;
        let f: FamilyPaymentFixture;
        let buyer: Party;
        let usdc: string;
        let reconcilers: PaymentReconciler[];

        before(async () => {
          c = await family.start(await storage.make());
          f = c.f;
          buyer = await f.party(10n ** BigInt(f.native.decimals), 'premium');
          await c.adapter.faucet?.fundToken('USDC', buyer.wallet, 1_000n * USDC);
          const listed = JSON.stringify((await f.get(buyer.key, '/networks')).json());
          const match = listed.match(/"symbol":"USDC","address":"([^"]+)"/);
          assert.ok(match?.[1] !== undefined, listed);
          usdc = match[1];
          // Two gateway instances' reconcilers on the one store, as behind a load balancer.
          reconcilers = ['instance-a', 'instance-b'].map(
            (instanceId) =>
              new PaymentReconciler({
                store: f.gw.store,
                networks: f.gw.networks,
                ledger: f.gw.services.ledger,
                wallets: f.gw.services.wallets,
                instanceId,
                recheckMs: 0,
              }),
          );
        });
        after(() => c.close());

        const usdcOf = (wallet: string) => c.adapter.getTokenBalance(wallet, usdc);
        const stored = async (id: string) => {
          const payment = await f.gw.store.payments.get(id);
          assert.ok(payment !== undefined, id);
          return payment;
        };
        const status = async (s: Party, id: string) => (await f.get(s.key, `/payment/status/${id}`)).json();
        /** Both instances' reconcilers, at once. */
        const pass = () => Promise.all(reconcilers.map((r) => r.runOnce()));
        async function passUntil(what: string, done: () => Promise<boolean>): Promise<void> {
          await until(
            what,
            async () => {
              await pass();
              return done();
            },
            60_000,
          );
        }
        async function seller(): Promise<Party> {
          return f.party(10n ** BigInt(f.native.decimals - 1), 'premium');
        }
        /** The buyer pays `s` `amount` USDC and `s` records it: the seller's payment id, confirmed, not final. */
        async function paid(s: Party, amount: number): Promise<string> {
          const sent = await f.post(buyer.key, '/payment/send', {
            walletAddress: buyer.wallet,
            recipientAddress: s.wallet,
            amount,
            asset: 'USDC',
          });
          assert.equal(sent.statusCode, 200, sent.body);
          const received = await f.post(s.key, '/payment/receive', {
            walletAddress: s.wallet,
            paymentProof: sent.json().paymentProof,
            expectedAmount: amount,
            asset: 'USDC',
          });
          assert.equal(received.statusCode, 200, received.body);
          const id = received.json().paymentId as string;
          assert.equal((await stored(id)).status, 'confirmed');
          return id;
        }
        const refund = (s: Party, id: string, body: object = {}) =>
          f.post(s.key, `/payment/refund/${id}`, body);
        async function typesOf(accountId: string, paymentId: string) {
          return (await f.gw.store.events.listAfter(accountId, 0, 10_000))
            .filter((e) => e.paymentId === paymentId)
            .map((e) => e.type);
        }

        it('review-30-refunds: a refund of a payment that is only confirmed is held — nothing sent — until the payment is finalized, then sent once', async () => {
          const s = await seller();
          const paymentId = await paid(s, 1);
          const before = await usdcOf(buyer.wallet);
          const res = await refund(s, paymentId, { amount: 0.4, reason: 'held' });
          assert.equal(res.statusCode, 200, res.body);
          const r = res.json();
          assert.equal(r.status, 'pending');
          assert.equal(r.heldUntil, 'refunded_payment_finalized');
          assert.equal(r.signature, '');
          assert.equal(r.paymentProof, '');
          assert.equal(r.amount, 0.4);
          // Counted against the payment at once: a further refund above what is left is refused.
          const tooMuch = await refund(s, paymentId, { amount: 0.600001 });
          assert.equal(tooMuch.statusCode, 400, tooMuch.body);
          assert.deepEqual((await status(s, paymentId)).refunds, {
            refunded: 0,
            pending: 0.4,
            refundable: 0.6,
            payments: [{ paymentId: r.paymentId, amount: 0.4, status: 'pending', timestamp: r.timestamp }],
          });
          const held = await status(s, r.paymentId);
          assert.equal(held.heldUntil, 'refunded_payment_finalized');
          assert.equal(held.signature, null);
          const nonceBefore = await c.sentCount(s.wallet);

          // The reconcilers look at it while the payment is still only confirmed: nothing happens.
          await pass();
          assert.equal((await stored(paymentId)).status, 'confirmed', 'not final yet');
          const still = await stored(r.paymentId);
          assert.deepEqual([still.status, still.signature, still.nonce ?? null], ['pending', null, null]);
          assert.equal(await usdcOf(buyer.wallet), before);
          assert.equal(await c.sentCount(s.wallet), nonceBefore);

          await c.finalizeAll();
          await passUntil(
            'the refund confirmed',
            async () => (await stored(r.paymentId)).status === 'confirmed',
          );
          assert.equal((await stored(paymentId)).status, 'finalized');
          assert.equal(await usdcOf(buyer.wallet), before + 400_000n, 'paid back exactly once');
          const sent = await status(s, r.paymentId);
          assert.equal(sent.heldUntil, undefined);
          assert.ok(typeof sent.signature === 'string' && sent.signature.length > 0);
          if (nonceBefore !== undefined) assert.equal(await c.sentCount(s.wallet), nonceBefore + 1);
          assert.deepEqual(
            (await typesOf(s.accountId, r.paymentId)).filter((t) => t !== 'payment.finalized'),
            ['payment.sent', 'payment.confirmed'],
          );
          const onOriginal = await typesOf(s.accountId, paymentId);
          assert.equal(onOriginal.filter((t) => t === 'payment.refunded').length, 1, onOriginal.join());
          assert.equal((await status(s, paymentId)).refunds.refunded, 0.4);
          // A refund of the finalized payment goes out at once, as before.
          const now = await refund(s, paymentId, { amount: 0.6 });
          assert.equal(now.statusCode, 200, now.body);
          assert.equal(now.json().heldUntil, undefined);
          assert.ok(['confirmed', 'submitted'].includes(now.json().status), now.body);
          await until('the second refund landed', async () => (await usdcOf(buyer.wallet)) === before + USDC);
        });

        it('concurrent refunds of a confirmed payment never sum above it; each held one is sent exactly once by two instances racing', async () => {
          const s = await seller();
          await c.adapter.faucet?.fundToken('USDC', s.wallet, 50n * USDC);
          const paymentId = await paid(s, 2);
          const before = await usdcOf(buyer.wallet);
          const answers = await Promise.all(
            Array.from({ length: 10 }, () => refund(s, paymentId, { amount: 0.3 })),
          );
          const ok = answers.filter((a) => a.statusCode === 200);
          assert.equal(ok.length, 6, answers.map((a) => a.body).join('\n'));
          for (const a of answers.filter((x) => x.statusCode !== 200))
            assert.equal(a.statusCode, 400, a.body);
          for (const a of ok) assert.equal(a.json().heldUntil, 'refunded_payment_finalized');
          assert.equal((await status(s, paymentId)).refunds.refundable, 0.2);

          await c.finalizeAll();
          const ids = ok.map((a) => a.json().paymentId as string);
          await passUntil('every refund confirmed', async () => {
            const all = await Promise.all(ids.map(stored));
            return all.every((p) => p.status === 'confirmed' || p.status === 'finalized');
          });
          assert.equal(await usdcOf(buyer.wallet), before + 1_800_000n);
          const signatures = new Set((await Promise.all(ids.map(stored))).map((p) => p.signature));
          assert.equal(signatures.size, 6);
          const sentTypes = await Promise.all(ids.map((id) => typesOf(s.accountId, id)));
          for (const types of sentTypes) assert.equal(types.filter((t) => t === 'payment.sent').length, 1);
        });

        it('a crash while held (the instance that leased it died) and one after it was signed but before the broadcast: released exactly once after restart', async () => {
          const s = await seller();
          const first = await paid(s, 1);
          const second = await paid(s, 1);
          const before = await usdcOf(buyer.wallet);
          const a = (await refund(s, first, { amount: 0.5 })).json();
          const b = (await refund(s, second, { amount: 0.25 })).json();
          assert.equal(a.heldUntil, 'refunded_payment_finalized');
          assert.equal(b.heldUntil, 'refunded_payment_finalized');
          await c.finalizeAll();
          // Bring both originals to finalized (their refunds may be released on the way; put them back
          // in the way a crash leaves them below).
          const released = new HeldRefundRelease({
            store: f.gw.store,
            networks: f.gw.networks,
            ledger: f.gw.services.ledger,
            wallets: f.gw.services.wallets,
          });
          // A process that dies while holding the lease of refund `a`: it took the lease and never came back.
          // It leases every open payment, `b` too, so `b` is resent only once the lease lapses: the lease
          // is kept well inside the lifetime of the blockhash `b` is signed with below (150 slots of 20 ms
          // here, 3 s), or `b` would rightly expire unsent instead of being resent.
          const leaseMs = 1_200;
          const at = Date.now();
          const leased = await f.gw.store.transaction((tx) =>
            tx.payments.lease('dead-instance', OPEN_STATUSES, at, at + leaseMs, 500),
          );
          assert.ok(leased.some((p) => p.id === a.paymentId));
          // Refund `b`: the process dies right after the signed refund was committed, before its broadcast.
          const dying = new Proxy(c.adapter, {
            get(target, name, receiver) {
              if (name === 'broadcast')
                return async () => {
                  throw new Error('the process died before the broadcast');
                };
              const value = Reflect.get(target, name, receiver);
              return typeof value === 'function' ? value.bind(target) : value;
            },
          });
          for (const id of [first, second]) {
            await f.gw.services.ledger.move(await stored(id), 'finalized', {});
          }
          await assert.rejects(released.advance(await stored(b.paymentId), dying), /process died/);
          const signedB = await stored(b.paymentId);
          assert.equal(signedB.status, 'submitted', 'signed and stored before the broadcast');
          assert.ok(signedB.signedTransaction !== null);
          // The lease of the dead instance keeps `a` from the others until it lapses.
          const passed = await pass().then(() => Date.now());
          // (Checked when the pass ended before the lease lapsed; on a slower machine it may not have.)
          if (passed < at + leaseMs) assert.equal((await stored(a.paymentId)).status, 'pending');
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, at + leaseMs + 100 - Date.now())));
          await passUntil('both refunds confirmed after the restart', async () =>
            (await Promise.all([a.paymentId, b.paymentId].map(stored))).every(
              (p) => p.status === 'confirmed',
            ),
          );
          assert.equal(await usdcOf(buyer.wallet), before + 750_000n, 'each paid back exactly once');
          assert.equal((await stored(b.paymentId)).signature, signedB.signature, 'the same signed bytes');
        });

        it('the refunded payment is reorged away while its refund is held: the refund is cancelled (failed, payment.failed), nothing is sent, its amount released', async () => {
          const s = await seller();
          const payer = await c.localPayer();
          const built = await f.post(buyer.key, '/transaction/send', {
            walletAddress: payer.address,
            recipientAddress: s.wallet,
            amount: 0.01,
          });
          assert.equal(built.statusCode, 200, built.body);
          const b = built.json();
          const payerFunded = await c.adapter.getBalance(payer.address);
          await payer.pay(b.transaction);
          await passUntil(
            "the payer's send confirmed",
            async () => (await stored(b.paymentId)).status === 'confirmed',
          );
          const received = await f.post(s.key, '/payment/receive', {
            walletAddress: s.wallet,
            paymentProof: b.paymentProof,
            expectedAmount: 0.01,
          });
          assert.equal(received.statusCode, 200, received.body);
          const paymentId = received.json().paymentId as string;
          const res = await refund(s, paymentId);
          assert.equal(res.statusCode, 200, res.body);
          const r = res.json();
          assert.equal(r.heldUntil, 'refunded_payment_finalized');
          const sellerNonce = await c.sentCount(s.wallet);

          await c.dropBlockOf(await stored(b.paymentId));
          await c.finalizeAll();
          await passUntil(
            'the refund cancelled',
            async () => (await stored(r.paymentId)).status === 'failed',
          );
          assert.equal((await stored(paymentId)).status, 'reverted');
          const cancelled = await status(s, r.paymentId);
          assert.match(cancelled.failureReason, new RegExp(`refunded payment ${paymentId} is reverted`));
          assert.equal(cancelled.signature, null);
          assert.equal(cancelled.heldUntil, undefined);
          assert.deepEqual(await typesOf(s.accountId, r.paymentId), ['payment.failed']);
          // The reorganisation undid the payer's payment (and its fee), and no refund arrived on top.
          assert.equal(await c.adapter.getBalance(payer.address), payerFunded, 'nothing was paid back');
          assert.equal(await c.sentCount(s.wallet), sellerNonce);
          // Released: the refund no longer holds any part of the payment.
          const original = await status(s, paymentId);
          assert.equal(original.refunds.pending, 0);
          assert.equal(original.refunds.refunded, 0);
          // A few more passes change nothing.
          await pass();
          assert.equal((await stored(r.paymentId)).status, 'failed');
        });

        it('a watch-only (local-mode) refund of a payment only confirmed is refused, 409 INVALID_PAYMENT_STATE saying to retry once finalized; answered once it is', async () => {
          const s = await seller();
          // An address the seller holds the key of elsewhere: the gateway could only build its refund.
          const watched = f.family.newAddress();
          await c.adapter.faucet?.fundNative(watched, 10n ** BigInt(f.native.decimals - 2));
          await c.adapter.faucet?.fundToken('USDC', watched, 2n * USDC);
          const receipt = newPayment(Date.now(), {
            id: newId('pay'),
            accountId: s.accountId,
            direction: 'received',
            mode: 'facilitator',
            status: 'confirmed',
            network: f.network,
            walletAddress: watched,
            sender: buyer.wallet,
            recipient: watched,
            amount: 2n * USDC,
            asset: { address: usdc, decimals: 6 },
            signature: 'not-looked-at',
          });
          await f.gw.services.ledger.record(receipt);
          const early = await refund(s, receipt.id, { amount: 1 });
          assert.equal(early.statusCode, 409, early.body);
          assert.equal(early.json().error.code, 'INVALID_PAYMENT_STATE');
          assert.match(early.json().error.details.paymentId, /not finalized yet; retry once it is finalized/);
          assert.equal((await status(s, receipt.id)).refunds.payments.length, 0, 'nothing recorded');
          await f.gw.services.ledger.move(receipt, 'finalized');
          const late = await refund(s, receipt.id, { amount: 1 });
          assert.equal(late.statusCode, 200, late.body);
          assert.equal(late.json().mode, 'local');
        });
      });
    }
  }
}
