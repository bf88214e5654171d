import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner, type KeyPairSigner } from '@solana/kit';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { type PaymentPayload, type PaymentRequirements, SettleError } from '@x402/core/types';
import { createPublicClient, http } from 'viem';
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import type { FeeBudgetSettings } from '../../../src/services/facilitator/fee-budget.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { type AddressKey, watchAddress } from '../../support/proof-of-control.ts';
import { openStream, type StreamClient } from '../../support/stream-client.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { WebhookReceiver } from '../../support/webhook-receiver.ts';
import {
  evmExactRequirements,
  evmPayload,
  svmExactRequirements,
  svmPayload,
} from '../../support/x402-buyer.ts';
import { gatewayFacilitator } from '../../support/x402-shop.ts';

/**
 * Accounts of the gateway attacking the built-in facilitator's money paths, on both embedded chains,
 * through the HTTP API with stock @x402 buyers (and a stock HTTPFacilitatorClient) on the other side:
 *
 * - payee squatting: an account holding a seller's payTo address as its wallet must see nothing of the
 *   settlements the seller asks for — no payment in status or history, no event on its stream, no webhook;
 * - fee drain: a burst of tiny settles to oneself, each paid for by the shared fee payer, stops at the
 *   account's daily fee budget with nothing claimed or broadcast past it; below the minimum amount,
 *   refused before anything is signed;
 * - one payload settled by two accounts at the same instant: one settlement, one payment, the winner's.
 *
 * One row per attack, run on each family: a new attack (or a new chain family) is one more row.
 */

type Family = 'solana' | 'evm';
type Caller = { readonly accountId: string; readonly key: string };

interface World {
  readonly family: Family;
  readonly gw: TestGateway;
  /** http://127.0.0.1:port of `gw`. */
  readonly url: string;
  /** A new Premium account (the facilitator is a Premium feature). */
  account(gw?: TestGateway): Promise<Caller>;
  /** A fresh address outside the gateway, its key held by the test, able to receive the token. */
  payee(): Promise<AddressKey>;
  /** A stock buyer's payment of `amount` atomic USDC units to `payTo`, for the facilitator of `gw`. */
  pay(
    payTo: string,
    amount: string,
    gw?: TestGateway,
  ): Promise<{ paymentPayload: PaymentPayload; paymentRequirements: PaymentRequirements }>;
  /** The fee payer of `gw` on this family: its native balance and its transaction count (EVM nonce). */
  feePayer(gw?: TestGateway): Promise<{ balance: bigint; sent: bigint }>;
  /** The USDC balance of `address`, atomic units. */
  usdcOf(address: string): Promise<bigint>;
}

interface Attack {
  readonly name: string;
  readonly run: (w: World) => Promise<void>;
}

/** POST /facilitator/settle as `caller`: its status, its JSON body, and its headers. */
async function settle(gw: TestGateway, caller: Caller, body: object) {
  const res = await gw.app.inject({
    method: 'POST',
    url: '/facilitator/settle',
    headers: bearer(caller.key),
    payload: body,
  });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

const historyOf = (gw: TestGateway, caller: Caller, address: string) =>
  callAs(gw, caller.key, 'GET', `/payment/history/${address}`);

/**
 * How many of `caller`'s payments are recorded under `address`: its history there, where an address
 * that is not the caller's wallet and has none of its payments is 403 — nothing, as 0.
 */
async function paymentsSeen(gw: TestGateway, caller: Caller, address: string): Promise<number> {
  const history = await historyOf(gw, caller, address);
  if (history.status === 403) return 0;
  assert.equal(history.status, 200, JSON.stringify(history.body));
  return history.body.total;
}

const ATTACKS: readonly Attack[] = [
  {
    name: "payee squatting: the account holding the seller's payTo sees nothing of the seller's settlement (status, history, stream, webhooks); the seller sees it",
    run: async (w) => {
      const [seller, attacker] = [await w.account(), await w.account()];
      const payTo = await w.payee();
      // The worst case: the attacker holds the address as its wallet (proved with its key, or kept from
      // before proof of control existed).
      const held = await watchAddress(w.gw, attacker.key, payTo);
      assert.equal(held.statusCode, 200, held.body);
      const hooks = { seller: new WebhookReceiver(), attacker: new WebhookReceiver() };
      const streams: Record<'seller' | 'attacker', StreamClient> = {} as never;
      const wsUrl = `${w.url.replace('http', 'ws')}/v1/payments/stream`;
      for (const [who, caller] of [
        ['seller', seller],
        ['attacker', attacker],
      ] as const) {
        const hook = await callAs(w.gw, caller.key, 'POST', '/webhooks', { url: await hooks[who].start() });
        assert.equal(hook.status, 200, JSON.stringify(hook.body));
        hooks[who].secret = hook.body.secret;
        streams[who] = await openStream(wsUrl, { headers: bearer(caller.key) });
        streams[who].send({ type: 'subscribe' });
        await streams[who].until((c) => c.messages.some((m) => m.type === 'subscribed'));
      }
      try {
        const request = await w.pay(payTo.address, '10000');
        const settled = await settle(w.gw, seller, { x402Version: 2, ...request });
        assert.equal(settled.status, 200);
        assert.equal(settled.body.success, true, JSON.stringify(settled.body));

        // The seller's books have it: history under payTo (not a wallet of the seller's), status, stream, webhook.
        const sellerHistory = await historyOf(w.gw, seller, payTo.address);
        assert.equal(sellerHistory.status, 200);
        assert.equal(sellerHistory.body.total, 1);
        const paymentId = sellerHistory.body.payments[0].paymentId as string;
        const status = await callAs(w.gw, seller.key, 'GET', `/payment/status/${paymentId}`);
        assert.equal(status.body.signature, settled.body.transaction);
        await streams.seller.until(
          (c) => c.events().some((e) => (e.data as { paymentId?: string }).paymentId === paymentId),
          10_000,
          "the seller's payment.received",
        );
        await hooks.seller.until(1);
        // After those positive signals: the attacker has nothing, anywhere.
        const attackerHistory = await historyOf(w.gw, attacker, payTo.address);
        assert.deepEqual([attackerHistory.status, attackerHistory.body.total], [200, 0]);
        const peek = await callAs(w.gw, attacker.key, 'GET', `/payment/status/${paymentId}`);
        assert.equal(peek.status, 404);
        assert.deepEqual(await w.gw.store.events.listAfter(attacker.accountId, 0, 100), []);
        assert.deepEqual(streams.attacker.events(), []);
        assert.equal(hooks.attacker.received.length, 0);
        // Nor is the payment's resource, payer or amount anywhere in the attacker's stream.
        assert.equal(JSON.stringify(streams.attacker.messages).includes(paymentId), false);
      } finally {
        for (const s of Object.values(streams)) s.close();
        await Promise.all(Object.values(hooks).map((h) => h.close()));
      }
    },
  },
  {
    name: 'payee squatting: the attacker settling the payload again is answered duplicate_settlement, and still sees nothing',
    run: async (w) => {
      const [seller, attacker] = [await w.account(), await w.account()];
      const payTo = await w.payee();
      assert.equal((await watchAddress(w.gw, attacker.key, payTo)).statusCode, 200);
      const request = { x402Version: 2, ...(await w.pay(payTo.address, '10000')) };
      assert.equal((await settle(w.gw, seller, request)).body.success, true);
      const again = await settle(w.gw, attacker, request);
      assert.deepEqual(
        [again.status, again.body.success, again.body.errorReason],
        [200, false, 'duplicate_settlement'],
      );
      assert.equal((await historyOf(w.gw, attacker, payTo.address)).body.total, 0);
      assert.deepEqual(await w.gw.store.events.listAfter(attacker.accountId, 0, 100), []);
      assert.equal((await historyOf(w.gw, seller, payTo.address)).body.total, 1);
    },
  },
  {
    name: 'two accounts settle one payload at the same instant: one settlement, one payment (the success’s), one fee charged',
    run: async (w) => {
      const [first, second] = [await w.account(), await w.account()];
      const payTo = await w.payee();
      const before = await w.usdcOf(payTo.address);
      const request = { x402Version: 2, ...(await w.pay(payTo.address, '10000')) };
      const answers = await Promise.all([settle(w.gw, first, request), settle(w.gw, second, request)]);
      const winners = answers.flatMap((a, i) => (a.body.success === true ? [i] : []));
      assert.equal(winners.length, 1, JSON.stringify(answers.map((a) => a.body)));
      const loser = answers[1 - (winners[0] ?? 0)];
      // The other learns where the winner's settlement stands — under way, or done — and its transaction.
      assert.ok(
        ['duplicate_settlement', 'settlement_pending'].includes(loser?.body.errorReason),
        JSON.stringify(loser?.body),
      );
      assert.equal(loser?.body.transaction, answers[winners[0] ?? 0]?.body.transaction);
      const [winner, other] = winners[0] === 0 ? [first, second] : [second, first];
      const again = await settle(w.gw, other, request);
      assert.deepEqual([again.body.success, again.body.errorReason], [false, 'duplicate_settlement']);
      assert.equal(await paymentsSeen(w.gw, winner, payTo.address), 1);
      assert.equal(await paymentsSeen(w.gw, other, payTo.address), 0);
      assert.deepEqual(await w.gw.store.events.listAfter(other.accountId, 0, 100), []);
      assert.equal((await w.usdcOf(payTo.address)) - before, 10_000n, 'paid once');
      const day = new Date().toISOString().slice(0, 10);
      const network = w.gw.services.facilitator.chainOf(request.paymentRequirements.network)?.info.id ?? '';
      assert.ok((await w.gw.store.sponsoredFees.spent(winner.accountId, network, day)) > 0n);
      assert.equal(await w.gw.store.sponsoredFees.spent(other.accountId, network, day), 0n);
    },
  },
  {
    name: 'fee drain: a burst of 1-unit settles to oneself stops at the daily fee budget; nothing is claimed or broadcast past it; another account is not held back',
    run: async (w) => {
      // Room for two stock settlements: Solana 2 × 10,001 lamports within 30,000; EVM 2.5 × the
      // reservation of one (~92,000 gas × the max fee bid now).
      const budgets =
        w.family === 'solana' ? { solana: '0.00003' } : { evm: await evmBudgetForAbout(w, 2.5) };
      const drained = await startDrainGateway(w, { budgets, minimums: {} });
      try {
        const attacker = await w.account(drained.gw);
        const payTo = await w.payee();
        const N = 8;
        const requests = await Promise.all(
          Array.from({ length: N }, async () => ({
            x402Version: 2,
            ...(await w.pay(payTo.address, '1', drained.gw)),
          })),
        );
        const feePayerBefore = await w.feePayer(drained.gw);
        const usdcBefore = await w.usdcOf(payTo.address);
        const answers = await Promise.all(requests.map((r) => settle(drained.gw, attacker, r)));
        const settled = answers.filter((a) => a.status === 200 && a.body.success === true);
        const refused = answers.filter((a) => a.status === 429);
        assert.equal(settled.length + refused.length, N, JSON.stringify(answers.map((a) => a.body)));
        if (w.family === 'solana') assert.equal(settled.length, 2);
        assert.ok(settled.length >= 1 && settled.length < N, `${settled.length} of ${N} settled`);
        for (const r of refused) {
          assert.equal(r.body.success, false);
          assert.equal(r.body.error.code, 'FEE_BUDGET_EXCEEDED');
          assert.ok(r.body.error.retryAfter >= 1 && r.body.error.retryAfter <= 86_400);
          assert.equal(r.headers?.['retry-after'], String(r.body.error.retryAfter));
          // Also an x402 SettleResponse: what a stock facilitator client reads.
          assert.equal(r.body.errorReason, 'fee_budget_exceeded');
          assert.equal(r.body.transaction, '');
          assert.equal(r.body.network, requests[0]?.paymentRequirements.network);
        }
        // Nothing past the budget reached the chain, or storage.
        const feePayerAfter = await w.feePayer(drained.gw);
        assert.equal(
          feePayerAfter.sent - feePayerBefore.sent,
          BigInt(w.family === 'evm' ? settled.length : 0),
        );
        if (w.family === 'solana')
          assert.equal(feePayerBefore.balance - feePayerAfter.balance, BigInt(settled.length) * 10_001n);
        assert.equal((await w.usdcOf(payTo.address)) - usdcBefore, BigInt(settled.length));
        const scheme = drained.gw.services.facilitator.schemeFor(
          drained.gw.services.facilitator.chainOf(requests[0]?.paymentRequirements.network)?.info.id ?? '',
        );
        const claimed = await Promise.all(
          requests.map(async (r) =>
            drained.gw.store.settlements.get(scheme?.settlementKey(r.paymentPayload.payload) ?? ''),
          ),
        );
        assert.equal(claimed.filter((c) => c !== undefined).length, settled.length);
        assert.equal((await historyOf(drained.gw, attacker, payTo.address)).body.total, settled.length);
        // What the budget holds is what the fee payer paid, never more than the budget.
        const network = claimed.find((c) => c !== undefined)?.network ?? '';
        const spent = await drained.gw.store.sponsoredFees.spent(
          attacker.accountId,
          network,
          new Date().toISOString().slice(0, 10),
        );
        const fees = claimed.reduce((sum, c) => sum + (c?.sponsoredFee?.amount ?? 0n), 0n);
        assert.equal(spent, fees);
        if (w.family === 'solana') assert.equal(spent, BigInt(settled.length) * 10_001n);

        // Spent to the end (EVM: each correction to the fee paid, below the worst case, made some room
        // again), one settle at a time; then the same refusal through a stock HTTPFacilitatorClient: a
        // SettleError with the x402 reason.
        let last: Awaited<ReturnType<typeof settle>> | undefined;
        for (let i = 0; i < 30 && last?.status !== 429; i++) {
          last = await settle(drained.gw, attacker, {
            x402Version: 2,
            ...(await w.pay(payTo.address, '1', drained.gw)),
          });
        }
        assert.equal(last?.status, 429, 'the budget ran out');
        const stock = gatewayFacilitator(drained.url, attacker.key);
        const extra = await w.pay(payTo.address, '1', drained.gw);
        await assert.rejects(
          stock.settle(extra.paymentPayload, extra.paymentRequirements),
          (error: unknown) => {
            assert.ok(error instanceof SettleError, String(error));
            assert.equal(error.statusCode, 429);
            assert.equal(error.errorReason, 'fee_budget_exceeded');
            return true;
          },
        );
        // The budget is the attacker's: another account settles on the same network the same day.
        const other = await w.account(drained.gw);
        const fine = await settle(drained.gw, other, {
          x402Version: 2,
          ...(await w.pay(payTo.address, '1', drained.gw)),
        });
        assert.equal(fine.body.success, true, JSON.stringify(fine.body));
      } finally {
        await drained.close();
      }
    },
  },
  {
    name: 'fee drain through POST /payment/receive: over the budget it is 429 FEE_BUDGET_EXCEEDED in the error body, nothing settled, and the Idempotency-Key stays free',
    run: async (w) => {
      // "0": this gateway sponsors no fees at all on the family.
      const drained = await startDrainGateway(w, { budgets: { [w.family]: '0' }, minimums: {} });
      try {
        const seller = await w.account(drained.gw);
        const wallet = await callAs(drained.gw, seller.key, 'POST', '/wallets', { chain: w.family });
        const payTo = wallet.body.address as string;
        if (w.family === 'solana')
          await callAs(drained.gw, seller.key, 'POST', '/faucet', {
            address: payTo,
            amount: 0.01,
            token: 'USDC',
          });
        const { paymentPayload } = await w.pay(payTo, '10000', drained.gw);
        const body = {
          walletAddress: payTo,
          paymentProof: encodePaymentSignatureHeader(paymentPayload),
          expectedAmount: 0.01,
          asset: 'USDC',
        };
        const before = await w.feePayer(drained.gw);
        for (const attempt of [1, 2]) {
          const res = await drained.gw.app.inject({
            method: 'POST',
            url: '/payment/receive',
            headers: { ...bearer(seller.key), 'idempotency-key': 'receive-over-budget' },
            payload: body,
          });
          assert.equal(res.statusCode, 429, res.body);
          assert.equal(res.json().error.code, 'FEE_BUDGET_EXCEEDED');
          assert.ok(res.json().error.retryAfter >= 1);
          assert.equal(res.headers['idempotent-replayed'], undefined, `attempt ${attempt} asked again`);
        }
        assert.deepEqual(await w.feePayer(drained.gw), before);
        assert.equal(await paymentsSeen(drained.gw, seller, payTo), 0);
      } finally {
        await drained.close();
      }
    },
  },
  {
    name: 'fee drain: a payment below the minimum settle amount is refused amount_below_minimum by verify and settle, before anything is signed',
    run: async (w) => {
      const seller = await w.account();
      const payTo = await w.payee();
      // Default minimum: 0.001 USDC = 1,000 atomic units.
      const request = { x402Version: 2, ...(await w.pay(payTo.address, '999')) };
      const before = await w.feePayer();
      const verified = await callAs(w.gw, seller.key, 'POST', '/facilitator/verify', request);
      assert.deepEqual([verified.body.isValid, verified.body.invalidReason], [false, 'amount_below_minimum']);
      const refused = await settle(w.gw, seller, request);
      assert.deepEqual(
        [refused.status, refused.body.success, refused.body.errorReason, refused.body.transaction],
        [200, false, 'amount_below_minimum', ''],
      );
      assert.match(refused.body.errorMessage, /at least 0\.001 USDC \(1000 atomic units\)/);
      const scheme = w.gw.services.facilitator.schemeFor(
        w.gw.services.facilitator.chainOf(request.paymentRequirements.network)?.info.id ?? '',
      );
      assert.equal(
        await w.gw.store.settlements.get(scheme?.settlementKey(request.paymentPayload.payload) ?? ''),
        undefined,
      );
      assert.deepEqual(await w.feePayer(), before);
      // At the minimum it settles.
      const enough = await settle(w.gw, seller, { x402Version: 2, ...(await w.pay(payTo.address, '1000')) });
      assert.equal(enough.body.success, true, JSON.stringify(enough.body));
    },
  },
];

/**
 * SQLite, or PostgreSQL when DATABASE_URL is set: the budget's reservations under a burst are the
 * database's to keep, on either.
 */
function storageForRun(): Promise<TempStorage> | TempStorage {
  return DATABASE_URL === undefined ? tempSqlite() : tempPostgres();
}

/** A second gateway on the same chains with its own budgets (its own storage and fee payers). */
async function startDrainGateway(w: World, feeBudget: FeeBudgetSettings) {
  const worldOf = w as World & { networks: NetworkRegistry };
  const gw = await startTestGateway({
    networks: worldOf.networks,
    feeBudget,
    storage: await storageForRun(),
  });
  await gw.services.facilitator.start();
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
  return { gw, url, close: () => gw.close() };
}

/** EVM: a budget of about `settlements` stock settlements at the max fee the chain asks now. */
async function evmBudgetForAbout(w: World, settlements: number): Promise<string> {
  const { evm } = w as World & { evm: TestEvm };
  const client = createPublicClient({ transport: http(evm.anvil.rpcUrl) });
  const { maxFeePerGas } = await client.estimateFeesPerGas();
  const wei = (maxFeePerGas * 92_000n * BigInt(Math.round(settlements * 10))) / 10n;
  return (Number(wei) / 1e18).toFixed(18).replace(/0+$/, '');
}

describe('security: attacks on the facilitator (payee squatting, fee drain, one payload on two accounts)', () => {
  let chain: TestChain;
  let evm: TestEvm;
  let networks: NetworkRegistry;
  let gw: TestGateway;
  let url: string;
  let funder: Caller;
  const buyers: { solana?: KeyPairSigner; evm?: PrivateKeyAccount } = {};

  before(async () => {
    [chain, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    networks = new NetworkRegistry([chain.adapter, evm.adapter]);
    gw = await startTestGateway({
      storage: await storageForRun(),
      networks,
      events: { config: { allowPrivateOutboundUrls: true, webhookRetryBaseMs: 50 } },
    });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    funder = await gw.newCaller('premium');
    buyers.solana = await generateKeyPairSigner();
    buyers.evm = privateKeyToAccount(generatePrivateKey());
    for (const address of [buyers.solana.address, buyers.evm.address]) {
      const funded = await callAs(gw, funder.key, 'POST', '/faucet', { address, amount: 10, token: 'USDC' });
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
  });

  after(async () => {
    await gw?.close();
    await Promise.all([chain?.close(), evm?.close()]);
    evm?.dispose();
  });

  const world = (family: Family): World & { networks: NetworkRegistry; evm: TestEvm } => ({
    family,
    gw,
    url,
    networks,
    evm,
    account: (on = gw) => on.newCaller('premium'),
    payee: async () => {
      if (family === 'evm') {
        const privateKey = generatePrivateKey();
        return { address: privateKeyToAccount(privateKey).address, privateKey };
      }
      const key = generateSolanaKeypair();
      // x402 `exact` does not create the payee's token account: a first USDC mint does.
      const made = await callAs(gw, funder.key, 'POST', '/faucet', {
        address: key.address,
        amount: 0.01,
        token: 'USDC',
      });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      return key;
    },
    pay: async (payTo, amount, on = gw) => {
      const paymentRequirements =
        family === 'solana'
          ? svmExactRequirements(chain, {
              amount,
              payTo,
              feePayer: on.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '',
            })
          : evmExactRequirements(evm, { amount, payTo });
      const paymentPayload =
        family === 'solana'
          ? await svmPayload(chain, buyers.solana as KeyPairSigner, paymentRequirements)
          : await evmPayload(buyers.evm as PrivateKeyAccount, paymentRequirements);
      return { paymentPayload, paymentRequirements };
    },
    feePayer: async (on = gw) => {
      const adapter = family === 'solana' ? chain.adapter : evm.adapter;
      const [address = ''] =
        on.services.facilitator.supported().signers[family === 'solana' ? 'solana:*' : 'eip155:*'] ?? [];
      const balance = await adapter.getBalance(address);
      if (family === 'solana') return { balance, sent: 0n };
      const client = createPublicClient({ transport: http(evm.anvil.rpcUrl) });
      return {
        balance,
        sent: BigInt(await client.getTransactionCount({ address: address as `0x${string}` })),
      };
    },
    usdcOf: async (address) => {
      const adapter = family === 'solana' ? chain.adapter : evm.adapter;
      const token = family === 'solana' ? chain.localnet.usdcMint.address : evm.usdc.address;
      const holdings = await adapter.getTokenAccounts(address);
      return holdings.filter((h) => h.mint === token).reduce((sum, h) => sum + h.amount, 0n);
    },
  });

  for (const family of ['solana', 'evm'] as const) {
    describe(family, () => {
      for (const attack of ATTACKS) it(attack.name, () => attack.run(world(family)));
    });
  }
});
