import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import { newId } from '../../../src/domain/ids.ts';
import { newPayment } from '../../../src/services/payments/new-payment.ts';
import type { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { countingReconciler } from '../../support/counting-reconciler.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startEvmPaymentFixture } from '../../support/evm-payment-fixture.ts';
import { type FamilyPaymentFixture, onEvm, onSolana } from '../../support/family-fixtures.ts';
import type { Party } from '../../support/party.ts';
import { startPaymentFixture } from '../../support/payment-fixture.ts';
import { bearer, type TestGatewayOptions } from '../../support/test-gateway.ts';
import { TEST_LOCALNET_FINALIZED_DEPTH } from '../../support/test-localnet.ts';
import { until } from '../../support/until.ts';
import { WebhookReceiver } from '../../support/webhook-receiver.ts';

/** Webhooks delivered fast, to a receiver on loopback. */
const EVENTS: TestGatewayOptions = {
  allowPrivateOutboundUrls: true,
  events: { config: { allowPrivateOutboundUrls: true, webhookRetryBaseMs: 50, eventsPollMs: 50 } },
};

/**
 * Refunds (#30): POST /payment/refund/{paymentId} through the HTTP API, on a real chain and a real
 * store. A buyer pays a seller in USDC (or the native currency), the seller receives it with the proof,
 * and refunds it: the buyer's balance rises by exactly the refund, refunds never sum above the payment
 * (also when bursts of them arrive at once), and everything that must be refused is, naming the field.
 */
const USDC = 1_000_000n;

interface Setup {
  readonly name: string;
  readonly skip: string | false;
  /** `finalizeAll`: moves the chain's finality past everything mined so far. */
  start(): Promise<{ f: FamilyPaymentFixture; close(): Promise<void>; finalizeAll(): Promise<void> }>;
}

const storages: { name: string; skip: string | false; make(): Promise<TempStorage> }[] = [
  { name: 'SQLite', skip: false, make: async () => tempSqlite() },
  { name: 'PostgreSQL', skip: SKIP_POSTGRES, make: tempPostgres },
];

const setups: Setup[] = storages.flatMap((storage) => [
  {
    name: `Solana localnet, ${storage.name}`,
    skip: storage.skip,
    start: async () => {
      const raw = await startPaymentFixture({ gateway: { storage: await storage.make(), ...EVENTS } });
      const { adapter, localnet } = raw.chain;
      return {
        f: onSolana(raw),
        close: () => raw.close(),
        finalizeAll: async () => {
          const now = BigInt(localnet.slot);
          // The slots finality needs (the test localnet's depth, 32), at once, as anvil mines its 70:
          // waiting for them to pass took 32 slots of 20 ms or more each, for every payment refunded.
          // The depth itself stays, so a refund sent is confirmed, not yet finalized, as on a cluster.
          localnet.advanceSlots(TEST_LOCALNET_FINALIZED_DEPTH);
          await until('finality past now', async () => (await adapter.finalizedSlot()) >= now, 60_000);
        },
      };
    },
  },
  {
    name: `anvil, ${storage.name}`,
    skip: storage.skip,
    start: async () => {
      const raw = await startEvmPaymentFixture({ gateway: { storage: await storage.make(), ...EVENTS } });
      // anvil has no block time and calls a block final 64 deep.
      return { f: onEvm(raw), close: () => raw.close(), finalizeAll: () => raw.anvil.mine({ blocks: 70 }) };
    },
  },
]);

/** The suite on one chain family and store (a file each, so each file stays within the test runner's time limit). */
export function refundSuites(family: 'Solana localnet' | 'anvil', storage: 'SQLite' | 'PostgreSQL'): void {
  for (const setup of setups.filter((s) => s.name === `${family}, ${storage}`)) {
    describe(`refunds on ${setup.name}`, { skip: setup.skip, timeout: 300_000 }, () => {
      let f: FamilyPaymentFixture;
      let close: () => Promise<void>;
      let finalizeAll: () => Promise<void>;
      let reconciler: PaymentReconciler;
      let chain: ChainAdapter;
      let buyer: Party;
      let usdc: string;
      /** 0.01 of the native currency, in atomic units. */
      let cent: bigint;

      before(async () => {
        ({ f, close, finalizeAll } = await setup.start());
        reconciler = countingReconciler(f.gw, 'refunds-worker').reconciler;
        const adapter = f.gw.networks.get(f.network);
        assert.ok(adapter !== undefined);
        chain = adapter;
        cent = 10n ** BigInt(f.native.decimals - 2);
        buyer = await f.party(100n * cent, 'premium');
        usdc = await fundUsdc(buyer.wallet, 1_000n * USDC);
      });
      after(() => close());

      async function fundUsdc(wallet: string, amount: bigint): Promise<string> {
        const faucet = chain.faucet;
        assert.ok(faucet !== undefined);
        await faucet.fundToken('USDC', wallet, amount);
        const token = (await f.get(buyer?.key ?? '', `/networks`)).json();
        const listed = JSON.stringify(token);
        const match = listed.match(/"symbol":"USDC","address":"([^"]+)"/);
        assert.ok(match?.[1] !== undefined, listed);
        return match[1];
      }
      const usdcBalance = (wallet: string) => chain.getTokenBalance(wallet, usdc);

      /** A seller (Premium, so bursts stay under the rate limit) with native currency for the fees. */
      async function seller(extraUsdc = 0n): Promise<Party> {
        const party = await f.party(100n * cent, 'premium');
        if (extraUsdc > 0n) await chain.faucet?.fundToken('USDC', party.wallet, extraUsdc);
        return party;
      }

      /**
       * The buyer pays `s` `amount` (whole units) and `s` records it: the seller's received payment id,
       * finalized (a refund of a payment only confirmed is held until then: held-refunds.test.ts).
       */
      async function paid(s: Party, amount: number, asset = 'USDC'): Promise<string> {
        const sent = await f.post(buyer.key, '/payment/send', {
          walletAddress: buyer.wallet,
          recipientAddress: s.wallet,
          amount,
          ...(asset === f.native.symbol ? {} : { asset }),
        });
        assert.equal(sent.statusCode, 200, sent.body);
        const received = await f.post(s.key, '/payment/receive', {
          walletAddress: s.wallet,
          paymentProof: sent.json().paymentProof,
          expectedAmount: amount,
          ...(asset === f.native.symbol ? {} : { asset }),
        });
        assert.equal(received.statusCode, 200, received.body);
        const id = received.json().paymentId as string;
        await finalizeAll();
        await until('the payment finalized', async () => {
          await reconciler.runOnce();
          return (await f.gw.store.payments.get(id))?.status === 'finalized';
        });
        return id;
      }

      const refund = (s: Party, paymentId: string, body: object = {}, headers: Record<string, string> = {}) =>
        f.post(s.key, `/payment/refund/${paymentId}`, body, headers);
      const status = async (s: Party, paymentId: string) =>
        (await f.get(s.key, `/payment/status/${paymentId}`)).json();

      it('refunds a USDC payment in full: the buyer gets exactly the amount back, linked both ways, in status, history and events', async () => {
        const s = await seller();
        const paymentId = await paid(s, 2.5);
        const before = await usdcBalance(buyer.wallet);
        const res = await refund(s, paymentId, { reason: 'not delivered', metadata: { ticket: 'T-1' } });
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json();
        assert.equal(body.mode, 'custodial');
        assert.equal(body.refundOf, paymentId);
        assert.equal(body.reason, 'not delivered');
        assert.equal(body.status, 'confirmed');
        assert.equal(body.amount, 2.5);
        assert.equal(body.recipient, buyer.wallet);
        assert.deepEqual(body.asset, { symbol: 'USDC', address: usdc, decimals: 6 });
        assert.equal(await usdcBalance(buyer.wallet), before + 2_500_000n);
        assert.equal(await usdcBalance(s.wallet), 0n);

        const original = await status(s, paymentId);
        assert.equal(original.type, 'received');
        assert.deepEqual(original.refunds, {
          refunded: 2.5,
          pending: 0,
          refundable: 0,
          payments: [
            { paymentId: body.paymentId, amount: 2.5, status: 'confirmed', timestamp: body.timestamp },
          ],
        });
        const refunded = await status(s, body.paymentId);
        assert.equal(refunded.type, 'refund');
        assert.equal(refunded.refundOf, paymentId);
        assert.equal(refunded.refundReason, 'not delivered');
        assert.deepEqual(refunded.metadata, { ticket: 'T-1' });
        assert.equal(refunded.refunds, undefined);

        const history = (await f.get(s.key, `/payment/history/${s.wallet}`)).json();
        assert.deepEqual(
          history.payments.map((p: { type: string; paymentId: string; refundOf?: string }) => [
            p.type,
            p.paymentId,
            p.refundOf,
          ]),
          [
            ['refund', body.paymentId, paymentId],
            ['received', paymentId, undefined],
          ],
        );

        const events = (await f.gw.store.events.listAfter(s.accountId, 0, 1000)).filter(
          (e) => e.type === 'payment.refunded',
        );
        assert.equal(events.length, 1);
        assert.equal(events[0]?.paymentId, paymentId);
        const data = events[0]?.data as {
          refunds: { refunded: number };
          refund: { paymentId: string; amount: number };
        };
        assert.equal(data.refunds.refunded, 2.5);
        assert.deepEqual([data.refund.paymentId, data.refund.amount], [body.paymentId, 2.5]);

        // Nothing is left: a further refund is refused naming the payment, and nothing moves.
        const again = await refund(s, paymentId);
        assert.equal(again.statusCode, 400, again.body);
        assert.equal(again.json().error.code, 'INVALID_PARAMETERS');
        assert.match(again.json().error.details.paymentId, /nothing is left to refund/);
        assert.equal(await usdcBalance(buyer.wallet), before + 2_500_000n);
      });

      it(`refunds a ${'native'} payment in full by default, exactly`, async () => {
        const s = await seller();
        const paymentId = await paid(s, 0.02, f.native.symbol);
        const before = await f.family.balance(buyer.wallet);
        const res = await refund(s, paymentId);
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json().amount, 0.02);
        assert.equal(res.json().asset.address, null);
        assert.equal(await f.family.balance(buyer.wallet), before + 2n * cent);
      });

      it('refunds in parts up to the payment and refuses one atomic unit more, 0, and too many decimals, naming amount', async () => {
        const s = await seller();
        const paymentId = await paid(s, 1);
        const before = await usdcBalance(buyer.wallet);
        const first = await refund(s, paymentId, { amount: 0.4 });
        assert.equal(first.statusCode, 200, first.body);
        const tooMuch = await refund(s, paymentId, { amount: 0.600001 });
        assert.equal(tooMuch.statusCode, 400, tooMuch.body);
        assert.match(
          tooMuch.json().error.details.amount,
          /is more than is left to refund: 0\.6 USDC of 1 USDC/,
        );
        const zero = await refund(s, paymentId, { amount: 0 });
        assert.equal(zero.statusCode, 400, zero.body);
        assert.ok(zero.json().error.details.amount !== undefined, zero.body);
        const decimals = await refund(s, paymentId, { amount: 0.1000001 });
        assert.equal(decimals.statusCode, 400, decimals.body);
        assert.match(decimals.json().error.details.amount, /USDC has 6 decimals/);
        const second = await refund(s, paymentId, { amount: 0.6 });
        assert.equal(second.statusCode, 200, second.body);
        assert.equal(await usdcBalance(buyer.wallet), before + USDC);
        const original = await status(s, paymentId);
        assert.equal(original.refunds.refunded, 1);
        assert.equal(original.refunds.refundable, 0);
        assert.equal(original.refunds.payments.length, 2);
      });

      it('answers the same Idempotency-Key with the same refund (the money moves once); the key on another payment is 422', async () => {
        const s = await seller();
        const paymentId = await paid(s, 1);
        const other = await paid(s, 1);
        const before = await usdcBalance(buyer.wallet);
        const headers = { 'idempotency-key': `refund-${newId('evt')}` };
        const first = await refund(s, paymentId, { amount: 0.25 }, headers);
        const second = await refund(s, paymentId, { amount: 0.25 }, headers);
        assert.equal(first.statusCode, 200, first.body);
        assert.equal(second.statusCode, 200, second.body);
        assert.equal(second.json().paymentId, first.json().paymentId);
        // Past the HTTP layer's memory too: the service finds the refund by its key.
        await f.gw.store.idempotency.purge(Date.now() + 1);
        const third = await refund(s, paymentId, { amount: 0.25 }, headers);
        assert.equal(third.statusCode, 200, third.body);
        assert.equal(third.json().paymentId, first.json().paymentId);
        const elsewhere = await refund(s, other, { amount: 0.25 }, headers);
        assert.equal(elsewhere.statusCode, 422, elsewhere.body);
        assert.equal(elsewhere.json().error.code, 'IDEMPOTENCY_KEY_REUSED');
        assert.equal(await usdcBalance(buyer.wallet), before + 250_000n);
        assert.equal((await status(s, paymentId)).refunds.payments.length, 1);
      });

      it('answers a burst of 20 concurrent full refunds of one payment with exactly one refund', async () => {
        // The wallet holds more than the payment, so only the refund rule can stop the others.
        const s = await seller(50n * USDC);
        const paymentId = await paid(s, 3);
        const before = await usdcBalance(buyer.wallet);
        const answers = await Promise.all(Array.from({ length: 20 }, () => refund(s, paymentId)));
        const ok = answers.filter((r) => r.statusCode === 200);
        const refused = answers.filter((r) => r.statusCode === 400);
        assert.deepEqual([ok.length, refused.length], [1, 19], answers.map((r) => r.body).join('\n'));
        for (const r of refused) assert.equal(r.json().error.code, 'INVALID_PARAMETERS');
        assert.equal(await usdcBalance(buyer.wallet), before + 3n * USDC);
        const original = await status(s, paymentId);
        assert.equal(original.refunds.payments.length, 1);
        assert.equal(original.refunds.refunded, 3);
      });

      it('answers a burst of 10 concurrent partial refunds that together exceed the payment: the sum never does', async () => {
        const s = await seller(50n * USDC);
        const paymentId = await paid(s, 2);
        const before = await usdcBalance(buyer.wallet);
        const answers = await Promise.all(
          Array.from({ length: 10 }, () => refund(s, paymentId, { amount: 0.3 })),
        );
        const ok = answers.filter((r) => r.statusCode === 200);
        assert.equal(ok.length, 6, answers.map((r) => r.body).join('\n'));
        for (const r of answers.filter((a) => a.statusCode !== 200)) {
          assert.equal(r.statusCode, 400, r.body);
          assert.match(r.json().error.details.amount, /is more than is left to refund: 0\.2 USDC of 2 USDC/);
        }
        assert.equal(await usdcBalance(buyer.wallet), before + 1_800_000n);
        assert.equal((await status(s, paymentId)).refunds.refundable, 0.2);
      });

      it("is 404 for another account's payment, as for one that does not exist; nothing moves", async () => {
        const s = await seller();
        const paymentId = await paid(s, 1);
        const stranger = await seller(10n * USDC);
        for (const id of [paymentId, newId('pay')]) {
          const res = await refund(stranger, id);
          assert.equal(res.statusCode, 404, res.body);
          assert.equal(res.json().error.code, 'PAYMENT_NOT_FOUND');
        }
        assert.equal((await status(s, paymentId)).refunds.payments.length, 0);
        // The buyer sees its own sent payment, not the seller's receipt.
        const own = await refund(buyer, paymentId);
        assert.equal(own.statusCode, 404, own.body);
      });

      it('refuses a refund of a refund, of a payment the account sent, and of one not confirmed yet, naming paymentId', async () => {
        const s = await seller();
        const paymentId = await paid(s, 1);
        const r = await refund(s, paymentId, { amount: 0.5 });
        assert.equal(r.statusCode, 200, r.body);
        const ofRefund = await refund(s, r.json().paymentId);
        assert.equal(ofRefund.statusCode, 400, ofRefund.body);
        assert.match(ofRefund.json().error.details.paymentId, /is a refund/);

        const sent = (await f.get(buyer.key, `/payment/history/${buyer.wallet}?type=sent&limit=1`)).json()
          .payments[0];
        const outgoing = await refund(buyer, sent.paymentId);
        assert.equal(outgoing.statusCode, 400, outgoing.body);
        assert.match(outgoing.json().error.details.paymentId, /only a payment it received/);

        // A receipt still pending (as a local-mode receive is until its transaction lands).
        const pending = newPayment(Date.now(), {
          id: newId('pay'),
          accountId: s.accountId,
          direction: 'received',
          mode: 'local',
          status: 'pending',
          network: f.network,
          walletAddress: s.wallet,
          sender: buyer.wallet,
          recipient: s.wallet,
          amount: USDC,
          asset: { address: usdc, decimals: 6 },
        });
        await f.gw.services.ledger.record(pending);
        const notYet = await refund(s, pending.id);
        assert.equal(notYet.statusCode, 409, notYet.body);
        assert.equal(notYet.json().error.code, 'INVALID_PAYMENT_STATE');
        assert.equal(notYet.json().error.details.status, 'pending');
      });

      it('for a payment to an address that is no custodial wallet of the account, answers an unsigned transaction (local mode) that holds its part', async () => {
        const s = await seller();
        // An address the seller holds the key of elsewhere: it holds the money, the gateway builds only.
        const watched = f.family.newAddress();
        await chain.faucet?.fundNative(watched, cent);
        await chain.faucet?.fundToken('USDC', watched, 2n * USDC);
        const receipt = newPayment(Date.now(), {
          id: newId('pay'),
          accountId: s.accountId,
          direction: 'received',
          mode: 'facilitator',
          status: 'finalized',
          network: f.network,
          walletAddress: watched,
          sender: buyer.wallet,
          recipient: watched,
          amount: 2n * USDC,
          asset: { address: usdc, decimals: 6 },
        });
        await f.gw.services.ledger.record(receipt);
        const res = await refund(s, receipt.id, { amount: 1.5 });
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json();
        assert.equal(body.mode, 'local');
        assert.equal(body.status, 'pending');
        assert.equal(typeof body.transaction, 'string');
        assert.ok(body.transaction.length > 0);
        assert.equal(body.refundOf, receipt.id);
        const original = await status(s, receipt.id);
        assert.deepEqual([original.refunds.pending, original.refunds.refundable], [1.5, 0.5]);
        const more = await refund(s, receipt.id, { amount: 0.6 });
        assert.equal(more.statusCode, 400, more.body);
      });

      it('holds refunds to the spend policy like any payment leaving the wallet', async () => {
        const s = await seller();
        const paymentId = await paid(s, 1);
        const admin = await f.gw.accounts.createKey(s.accountId, 'admin', ['admin']);
        const set = await f.gw.app.inject({
          method: 'PUT',
          url: '/spend-policies/account',
          headers: bearer(admin.key),
          payload: { limits: [{ network: f.network, asset: usdc, maxPerPayment: '0.5' }] },
        });
        assert.equal(set.statusCode, 200, set.body);
        const res = await refund(s, paymentId);
        assert.equal(res.statusCode, 403, res.body);
        assert.equal(res.json().error.code, 'SPEND_LIMIT_EXCEEDED');
        const half = await refund(s, paymentId, { amount: 0.5 });
        assert.equal(half.statusCode, 200, half.body);
      });

      it('delivers payment.refunded to a webhook that asks for it, signed, with the refund and the totals', async () => {
        const s = await seller();
        const hooks = new WebhookReceiver();
        try {
          const hook = await f.post(s.key, '/webhooks', {
            url: await hooks.start(),
            eventTypes: ['payment.refunded', 'payment.refund_reverted'],
          });
          assert.equal(hook.statusCode, 200, hook.body);
          hooks.secret = hook.json().secret;
          const paymentId = await paid(s, 1.5);
          const r = await refund(s, paymentId, { amount: 1 });
          assert.equal(r.statusCode, 200, r.body);
          await hooks.until(1);
          const delivered = hooks.received[0]?.verified as {
            type: string;
            data: {
              paymentId: string;
              refunds: { refunded: number; refundable: number };
              refund: { paymentId: string };
            };
          };
          assert.equal(delivered.type, 'payment.refunded');
          assert.equal(delivered.data.paymentId, paymentId);
          assert.deepEqual([delivered.data.refunds.refunded, delivered.data.refunds.refundable], [1, 0.5]);
          assert.equal(delivered.data.refund.paymentId, r.json().paymentId);
          assert.equal(hooks.received.length, 1, 'only the payment.refunded: not the sends and receipts');
        } finally {
          await hooks.close();
        }
      });

      it('gives a reverted refund back: payment.refund_reverted on the payment, and its amount is refundable again', async () => {
        const s = await seller();
        const paymentId = await paid(s, 1);
        const r = await refund(s, paymentId);
        assert.equal(r.statusCode, 200, r.body);
        const stored = await f.gw.store.payments.get(r.json().paymentId);
        assert.ok(stored !== undefined);
        // What FinalityWatch does when the refund's transaction left the chain for good.
        const moved = await f.gw.services.ledger.move(stored, 'reverted');
        assert.equal(moved?.status, 'reverted');
        const events = (await f.gw.store.events.listAfter(s.accountId, 0, 1000)).filter(
          (e) => e.paymentId === paymentId,
        );
        assert.deepEqual(
          events.map((e) => e.type).filter((t) => t.startsWith('payment.refund')),
          ['payment.refunded', 'payment.refund_reverted'],
        );
        const last = events.at(-1)?.data as { refunds: { refunded: number; refundable: number } };
        assert.deepEqual([last.refunds.refunded, last.refunds.refundable], [0, 1]);
        const original = await status(s, paymentId);
        assert.deepEqual([original.refunds.refunded, original.refunds.refundable], [0, 1]);
      });
    });
  }
}
