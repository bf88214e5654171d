import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Localnet, startLocalnet } from '@gate402/localnet';
import type { LightMyRequestResponse } from 'fastify';
import { type Address, createPublicClient, type Hex, http } from 'viem';
import type { ChainAdapter } from '../../../src/chains/chain-adapter.ts';
import { createAnvilClient } from '../../../src/chains/evm/anvil-client.ts';
import { anvilAdapter } from '../../../src/chains/evm/embedded-evm.ts';
import { EvmAdapter } from '../../../src/chains/evm/evm-adapter.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { RpcEndpoints } from '../../../src/chains/rpc-endpoints.ts';
import type { SolanaAdapter } from '../../../src/chains/solana/solana-adapter.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { type ChainFamily, evmFamily, solanaFamily } from '../../support/chain-family.ts';
import { type FaultMode, type FaultProxy, startFaultProxy } from '../../support/fault-proxy.ts';
import { solanaAdapterFor } from '../../support/solana-adapter-for.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/** Short limits so a test sees the behaviour in well under a second; production defaults are 8 s / 2 s. */
const TIMEOUT_MS = 300;
const DOWN_MS = 400;
/** What "promptly" means here: a little over one time limit, never the 10 s confirmation wait. */
const PROMPT_MS = 1_500;
/** The localnet's slot length here, and the adapter's silence limit for it: ten slots, at least TIMEOUT_MS. */
const SLOT_MS = 50;
const SILENCE_MS = Math.max(TIMEOUT_MS, 10 * SLOT_MS);
const LAMPORTS = 1_000_000_000n;
const ETH = 10n ** 18n;

/** A caller and its custodial wallet. */
interface Party {
  readonly key: string;
  readonly wallet: string;
}

/** What a family-only test of the suite below may use: the running gateway, proxy and parties. */
interface FaultContext<F> {
  readonly raw: F;
  readonly gw: TestGateway;
  readonly proxy: FaultProxy;
  readonly buyer: Party;
  readonly seller: Party;
  /** Ends the fault and waits until the endpoint is asked again. */
  recover(): Promise<void>;
}

/**
 * One chain family behind a real TCP proxy that drops, stalls, errors and flaps. What the chain is, how
 * the family's adapter is routed through the proxy, which JSON-RPC method broadcasts and which checks a
 * confirmation are the family's; what the gateway must do about each fault is the same.
 */
interface FaultFamily<F> {
  readonly name: string;
  readonly chain: 'solana' | 'evm';
  start(): Promise<F & { close(): Promise<void> }>;
  /** The chain's own RPC endpoint, and its PubSub endpoint where the adapter subscribes (Solana). */
  rpcUrl(raw: F): string;
  pubsubUrl(raw: F): string | undefined;
  /** The family's adapter reaching the chain through `urls` in order (and `wsUrl`), with the short limits here. */
  routed(raw: F, urls: string[], wsUrl?: string): ChainAdapter;
  /** Balances and funding read straight from the chain, past the proxy. */
  money(raw: F): ChainFamily;
  /** A fault that fails the broadcast alone, and the text of the requests that broadcast. */
  readonly broadcastFault: FaultMode;
  readonly broadcastMethod: string;
  /** The text of the requests a confirmation wait checks the transaction with. */
  readonly confirmMethod: string;
  /** More than any one plain transfer's fee, in atomic units. */
  readonly maxFee: bigint;
  /** How many transactions `address` has had mined, where the chain counts them (EVM's nonce). */
  minedCount?(raw: F, address: string): Promise<number>;
  /** Tests of what only this family does, on the same chain and gateway. */
  only(context: () => FaultContext<F>): void;
}

function chainFaults<F>(family: FaultFamily<F>): void {
  describe(`chain RPC failures on ${family.name} through a fault-injecting proxy`, () => {
    let raw: F & { close(): Promise<void> };
    let rpcProxy: FaultProxy;
    let wsProxy: FaultProxy | undefined;
    let chain: ChainAdapter;
    let money: ChainFamily;
    let gw: TestGateway;
    let reconciler: PaymentReconciler;
    let buyer: Party;
    let seller: Party;
    const units = (amount: number) => (BigInt(Math.round(amount * 1e6)) * money.unit) / 1_000_000n;

    const fault = (mode: FaultMode) => {
      rpcProxy.set(mode);
      wsProxy?.set(mode);
    };
    const post = (key: string, url: string, payload: object, headers: Record<string, string> = {}) =>
      gw.app.inject({ method: 'POST', url, headers: { ...bearer(key), ...headers }, payload });
    const get = (key: string, url: string) => gw.app.inject({ method: 'GET', url, headers: bearer(key) });
    const timed = async (work: () => Promise<LightMyRequestResponse>) => {
      const started = performance.now();
      const response = await work();
      return { response, ms: performance.now() - started };
    };
    const send = (amount: number, headers: Record<string, string> = {}) =>
      post(
        buyer.key,
        '/payment/send',
        { walletAddress: buyer.wallet, recipientAddress: seller.wallet, amount },
        headers,
      );
    /** Read straight from the chain, past the proxy. */
    const balance = (address: string) => money.balance(address);
    /**
     * Ends the fault and waits until the endpoint is asked again: calls still in flight from the outage
     * may time out (and mark it down) up to TIMEOUT_MS later, then it is skipped for DOWN_MS.
     */
    const recover = async () => {
      fault({ kind: 'pass' });
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + DOWN_MS + 100));
    };

    before(async () => {
      raw = await family.start();
      money = family.money(raw);
      rpcProxy = await startFaultProxy(family.rpcUrl(raw));
      const pubsub = family.pubsubUrl(raw);
      wsProxy = pubsub === undefined ? undefined : await startFaultProxy(pubsub.replace(/^ws/, 'http'));
      chain = family.routed(raw, [rpcProxy.url], wsProxy?.url.replace(/^http/, 'ws'));
      gw = await startTestGateway({
        networks: new NetworkRegistry([chain]),
        confirmTimeoutMs: 10_000,
        readiness: [{ name: chain.info.id, check: () => chain.ping() }],
      });
      reconciler = new PaymentReconciler({
        store: gw.store,
        networks: gw.networks,
        ledger: gw.services.ledger,
        wallets: gw.services.wallets,
        instanceId: 'reconciler',
        recheckMs: 0,
      });
      buyer = await party();
      seller = await party();
      await money.fund(buyer.wallet, 10n * money.unit);
    });
    after(async () => {
      await gw?.close();
      await chain?.close();
      await rpcProxy?.close();
      await wsProxy?.close();
      await raw?.close();
    });

    async function party(): Promise<Party> {
      // Enterprise with a high rate: a caller retrying 503s while the endpoint flaps must not meet the limit.
      const caller = await gw.newCaller('enterprise', 100_000);
      const created = await post(caller.key, '/wallets', { chain: family.chain });
      assert.equal(created.statusCode, 200, created.body);
      return { key: caller.key, wallet: created.json().address as string };
    }

    async function paymentsOf(key: string, wallet: string) {
      const history = await get(key, `/payment/history/${wallet}?type=sent`);
      assert.equal(history.statusCode, 200, history.body);
      return history.json().payments as { paymentId: string; status: string; amount: number }[];
    }

    /** Runs the reconciler until every open payment of the buyer is settled (or gives up). */
    async function reconcileUntilSettled() {
      for (let pass = 0; pass < 100; pass++) {
        await reconciler.runOnce();
        const open = (await paymentsOf(buyer.key, buyer.wallet)).filter(
          (p) => p.status === 'pending' || p.status === 'submitted',
        );
        if (open.length === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.fail('payments still open after 100 reconciler passes');
    }

    /** Where the chain counts a sender's mined transactions (EVM), that exactly one more was mined. */
    async function minedOnce(run: () => Promise<void>) {
      const before = await family.minedCount?.(raw, buyer.wallet);
      await run();
      if (before !== undefined)
        assert.equal(await family.minedCount?.(raw, buyer.wallet), before + 1, 'one nonce used');
    }

    for (const [name, mode] of [
      ['refuses connections', { kind: 'drop' }],
      ['stalls past the time limit', { kind: 'hang' }],
      ['answers HTTP 502', { kind: 'http-error', status: 502 }],
    ] as const) {
      it(`answers 503 CHAIN_UNAVAILABLE promptly, stores nothing and reports not ready while the endpoint ${name}`, async () => {
        const sellerBefore = await balance(seller.wallet);
        const paymentsBefore = (await paymentsOf(buyer.key, buyer.wallet)).length;
        fault(mode);

        const { response, ms } = await timed(() => send(0.01));
        assert.equal(response.statusCode, 503, response.body);
        assert.ok(ms < PROMPT_MS, `answered after ${Math.round(ms)} ms`);
        const error = response.json().error;
        assert.equal(error.code, 'CHAIN_UNAVAILABLE');
        assert.ok(Number.isInteger(error.retryAfter) && error.retryAfter >= 1, JSON.stringify(error));
        assert.equal(response.headers['retry-after'], String(error.retryAfter));
        // The RPC URL can carry an API key: it never reaches the caller.
        assert.ok(!response.body.includes(String(rpcProxy.port)), response.body);

        // Reads answer the same, at once: the endpoint is skipped rather than waited for again.
        const portfolio = await timed(() => get(buyer.key, `/portfolio/${buyer.wallet}`));
        assert.equal(portfolio.response.statusCode, 503, portfolio.response.body);
        assert.equal(portfolio.response.json().error.code, 'CHAIN_UNAVAILABLE');
        assert.ok(portfolio.ms < PROMPT_MS, `portfolio answered after ${Math.round(portfolio.ms)} ms`);

        const notReady = await gw.app.inject({ method: 'GET', url: '/readyz' });
        assert.equal(notReady.statusCode, 503);
        assert.equal(notReady.json().checks[chain.info.id].ok, false);
        assert.equal(notReady.json().checks.storage.ok, true);

        await recover();
        const ready = await gw.app.inject({ method: 'GET', url: '/readyz' });
        assert.equal(ready.statusCode, 200, ready.body);
        assert.equal((await paymentsOf(buyer.key, buyer.wallet)).length, paymentsBefore, 'nothing stored');
        assert.equal(await balance(seller.wallet), sellerBefore, 'nothing paid');

        const after = await send(0.01);
        assert.equal(after.statusCode, 200, after.body);
        assert.equal(after.json().status, 'confirmed');
      });
    }

    it('answers a send whose broadcast cannot reach the chain as pending at once, and finishes it once after recovery', async () => {
      const sellerBefore = await balance(seller.wallet);
      const buyerBefore = await balance(buyer.wallet);
      const broadcastsBefore = rpcProxy.forwarded(family.broadcastMethod);
      // Everything up to the broadcast works; the broadcast itself meets a dead endpoint.
      fault(family.broadcastFault);

      let paymentId = '';
      await minedOnce(async () => {
        const { response, ms } = await timed(() => send(0.2, { 'idempotency-key': 'outage-1' }));
        assert.equal(response.statusCode, 200, response.body);
        assert.ok(ms < PROMPT_MS, `answered after ${Math.round(ms)} ms`);
        const answer = response.json();
        paymentId = answer.paymentId;
        assert.equal(answer.status, 'pending');
        assert.match(answer.paymentProof, /^0x/);
        assert.equal((await get(buyer.key, `/payment/status/${paymentId}`)).json().status, 'pending');

        // A retry with the same key while the chain is still down answers the same payment, not another.
        const retried = await send(0.2, { 'idempotency-key': 'outage-1' });
        assert.equal(retried.json().paymentId, paymentId);
        // The reconciler cannot resend yet either, and gives up without harm.
        await reconciler.runOnce();
        assert.equal(
          rpcProxy.forwarded(family.broadcastMethod),
          broadcastsBefore,
          'no broadcast got through',
        );
        assert.equal(await balance(seller.wallet), sellerBefore);

        await recover();
        await reconcileUntilSettled();
      });
      const settled = (await get(buyer.key, `/payment/status/${paymentId}`)).json();
      assert.ok(['confirmed', 'finalized'].includes(settled.status), settled.status);
      assert.equal(await balance(seller.wallet), sellerBefore + units(0.2), 'paid exactly once');
      const fee = buyerBefore - (await balance(buyer.wallet)) - units(0.2);
      assert.ok(fee > 0n && fee < family.maxFee, `buyer paid the amount once plus a fee of ${fee}`);
      // Resending the stored bytes again changes nothing.
      await reconciler.runOnce();
      assert.equal(await balance(seller.wallet), sellerBefore + units(0.2));

      // The next send (on EVM: with the next nonce) lands at once.
      const next = await send(0.01);
      assert.equal(next.statusCode, 200, next.body);
      assert.equal(next.json().status, 'confirmed');
    });

    it('pays each of several sends exactly once while the endpoint flaps', async () => {
      const sellerBefore = await balance(seller.wallet);
      fault({ kind: 'flap', periodMs: 120 });
      const ids = new Set<string>();
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        // A caller retries a 503 with the same Idempotency-Key, as the error asks.
        for (let attempt = 0; attempt < 60; attempt++) {
          const response = await send(0.05, { 'idempotency-key': `flap-${i}` });
          statuses.push(response.statusCode);
          if (response.statusCode === 200) {
            ids.add(response.json().paymentId);
            break;
          }
          assert.equal(response.statusCode, 503, response.body);
          assert.equal(response.json().error.code, 'CHAIN_UNAVAILABLE');
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      assert.equal(ids.size, 4, `every send got one payment (statuses: ${statuses.join(',')})`);
      await recover();
      await reconcileUntilSettled();
      // A payment stored while the endpoint was down lands once when resent, or, if it could no longer
      // land first, expires without landing; never both, never twice.
      let confirmed = 0n;
      for (const id of ids) {
        const status = (await get(buyer.key, `/payment/status/${id}`)).json().status;
        assert.ok(['confirmed', 'finalized', 'expired'].includes(status), `${id} is ${status}`);
        if (status !== 'expired') confirmed += 1n;
      }
      assert.ok(confirmed >= 1n, 'payments went through between the flaps');
      assert.equal(
        await balance(seller.wallet),
        sellerBefore + confirmed * units(0.05),
        'each paid at most once',
      );
    });

    it('ends a confirmation wait already running once every endpoint is down: the send answers submitted at once and is paid once', async () => {
      const sellerBefore = await balance(seller.wallet);
      let paymentId = '';
      await minedOnce(async () => {
        // The broadcast goes through; the checks of its confirmation meet a stalled endpoint, which is
        // then marked down while the send still waits. Without this, the send held on for its 10 s wait.
        fault({ kind: 'hang', match: family.confirmMethod });
        const { response, ms } = await timed(() => send(0.03, { 'idempotency-key': 'wait-cut-1' }));
        assert.equal(response.statusCode, 200, response.body);
        assert.ok(ms < PROMPT_MS, `answered after ${Math.round(ms)} ms`);
        const answer = response.json();
        paymentId = answer.paymentId;
        assert.equal(answer.status, 'submitted');

        await recover();
        const retried = await send(0.03, { 'idempotency-key': 'wait-cut-1' });
        assert.equal(retried.json().paymentId, paymentId, 'a retry finds the same payment');
        await reconcileUntilSettled();
      });
      const settled = (await get(buyer.key, `/payment/status/${paymentId}`)).json();
      assert.ok(['confirmed', 'finalized'].includes(settled.status), settled.status);
      assert.equal(await balance(seller.wallet), sellerBefore + units(0.03), 'paid exactly once');
    });

    it('fails over to the next endpoint when the first is down, and back when it recovers', async () => {
      const down = await startFaultProxy(family.rpcUrl(raw));
      const up = await startFaultProxy(family.rpcUrl(raw));
      const routed = family.routed(raw, [down.url, up.url]);
      try {
        down.set({ kind: 'hang' });
        const started = performance.now();
        assert.equal(typeof (await routed.getBlockHeight()), 'bigint');
        assert.ok(performance.now() - started < PROMPT_MS);
        // Skipped while it is down: the next call goes straight to the second endpoint.
        const before = up.forwarded('getBalance');
        const quick = performance.now();
        await routed.getBalance(buyer.wallet);
        assert.ok(performance.now() - quick < TIMEOUT_MS, 'the stalled endpoint was not waited for again');
        assert.equal(up.forwarded('getBalance'), before + 1);

        down.set({ kind: 'pass' });
        await new Promise((resolve) => setTimeout(resolve, DOWN_MS + 50));
        await routed.getBalance(seller.wallet);
        assert.equal(down.forwarded('getBalance'), 1, 'the first endpoint is preferred again');
      } finally {
        await routed.close();
        await down.close();
        await up.close();
      }
    });

    family.only(() => ({ raw, gw, proxy: rpcProxy, buyer, seller, recover }));
  });
}

// Solana: a localnet with 50 ms slots (a blockhash lasts 7.5 s, longer than the outages here), its RPC
// and PubSub endpoints both behind the proxy.
chainFaults<{ localnet: Localnet; direct: SolanaAdapter }>({
  name: 'Solana',
  chain: 'solana',
  start: async () => {
    const localnet = await startLocalnet({ port: 0, slotMs: SLOT_MS, finalizedDepth: 8 });
    const direct = routed(localnet, [localnet.rpcUrl], undefined);
    return {
      localnet,
      direct,
      close: async () => {
        await direct.close();
        await localnet.close();
      },
    };
  },
  rpcUrl: ({ localnet }) => localnet.rpcUrl,
  pubsubUrl: ({ localnet }) => localnet.wsUrl,
  routed: ({ localnet }, urls, wsUrl) => routed(localnet, urls, wsUrl),
  money: ({ localnet, direct }) => solanaFamily(localnet, direct),
  broadcastFault: { kind: 'drop', match: '"sendTransaction"' },
  broadcastMethod: '"sendTransaction"',
  confirmMethod: '"getSignatureStatuses"',
  maxFee: 100_000n,
  only: (context) => {
    it('moves the slot subscription to the next PubSub endpoint when the first drops, and back when that one fails', async () => {
      const { localnet } = context().raw;
      const { first, second, chain, close } = await twoPubsubEndpoints(localnet);
      try {
        // A wait for a transaction that never lands keeps the feed wanted throughout.
        const waiting = chain.waitForConfirmation('1'.repeat(64), BigInt(Number.MAX_SAFE_INTEGER), 20_000);
        await until('the first endpoint carries the subscription', () => connections(first) === 1);
        assert.equal(connections(second), 0);

        first.set({ kind: 'drop' });
        await until('the second endpoint takes over', () => connections(second) === 1);

        first.set({ kind: 'pass' });
        await new Promise((resolve) => setTimeout(resolve, DOWN_MS + 50));
        second.set({ kind: 'drop' });
        await until('the first endpoint is subscribed to again', () => connections(first) === 2);
        await chain.close();
        assert.deepEqual(await waiting, { status: 'pending' });
      } finally {
        await close();
      }
    });

    it('moves the slot subscription to the next PubSub endpoint within its silence limit when the first stays open but sends nothing, and sends still confirm', async () => {
      const { localnet } = context().raw;
      // The second is also a proxy, passing everything, only so the test can see which endpoint carries the feed.
      const { first, second, chain, close } = await twoPubsubEndpoints(localnet);
      const gateway = await startTestGateway({
        networks: new NetworkRegistry([chain]),
        confirmTimeoutMs: 10_000,
      });
      try {
        const caller = await gateway.newCaller('enterprise', 1_000);
        const wallet = async () => {
          const created = await gateway.app.inject({
            method: 'POST',
            url: '/wallets',
            headers: bearer(caller.key),
            payload: { chain: 'solana' },
          });
          assert.equal(created.statusCode, 200, created.body);
          return created.json().address as string;
        };
        const from = await wallet();
        const to = await wallet();
        localnet.airdrop(from, LAMPORTS);
        // Funded once the airdrop's slot has ended: the gateway reads balances at confirmed.
        for (let i = 0; i < 100 && (await chain.getBalance(from)) !== LAMPORTS; i++)
          await new Promise((resolve) => setTimeout(resolve, SLOT_MS));
        const pay = async (amount: number) => {
          const response = await gateway.app.inject({
            method: 'POST',
            url: '/payment/send',
            headers: bearer(caller.key),
            payload: { walletAddress: from, recipientAddress: to, amount },
          });
          assert.equal(response.statusCode, 200, response.body);
          return response.json().status as string;
        };
        // A wait for a transaction that never lands keeps the feed wanted between sends.
        const waiting = chain.waitForConfirmation('1'.repeat(64), BigInt(Number.MAX_SAFE_INTEGER), 20_000);
        await until('the first endpoint carries the subscription', () => first.openConnections() === 1);
        assert.equal(await pay(0.01), 'confirmed');
        assert.ok(await flowing(first), 'slots arrive through the first endpoint');
        assert.equal(connections(second), 0);

        first.set({ kind: 'silent' });
        const moved = await until('the second endpoint takes over', () => second.openConnections() === 1);
        // Moved by the silence limit (the last slot came at most a slot or so before the silence), not
        // by anything sooner, and at once when it was reached.
        assert.ok(moved > SILENCE_MS - 3 * SLOT_MS, `moved after ${Math.round(moved)} ms`);
        assert.ok(moved < SILENCE_MS + 250, `moved after ${Math.round(moved)} ms`);
        await until('the silent subscription is closed', () => first.openConnections() === 0);
        assert.equal(connections(first), 1, 'the silent endpoint is not subscribed to again at once');
        assert.ok(await flowing(second), 'slots arrive through the second endpoint');

        assert.equal(await pay(0.01), 'confirmed');
        assert.equal(await context().raw.direct.getBalance(to), 20_000_000n);
        await chain.close();
        assert.deepEqual(await waiting, { status: 'pending' });
      } finally {
        await gateway.close();
        await close();
      }
    });

    it('moves the slot subscription back to the preferred PubSub endpoint once it recovers, while the fallback still works', async () => {
      const RETURN_MS = 800;
      const { localnet } = context().raw;
      const { first, second, chain, close } = await twoPubsubEndpoints(localnet, {
        slotFeedReturnMs: RETURN_MS,
      });
      try {
        const waiting = chain.waitForConfirmation('1'.repeat(64), BigInt(Number.MAX_SAFE_INTEGER), 20_000);
        await until('the first endpoint carries the subscription', () => first.openConnections() === 1);

        first.set({ kind: 'drop' });
        await until('the second endpoint takes over', () => second.openConnections() === 1);
        // Tries of the first while it still refuses leave the feed where it is: waited for by two
        // refused tries seen at the first endpoint, not by a sleep.
        const triedBefore = first.received('HTTP/1.1');
        await until(
          'the first endpoint is tried twice while it refuses',
          () => first.received('HTTP/1.1') >= triedBefore + 2,
        );
        assert.equal(connections(second), 1, 'the second subscription was never replaced');
        assert.equal(second.openConnections(), 1);
        assert.ok(await flowing(second), 'slots arrive through the second endpoint');

        first.set({ kind: 'pass' });
        const back = await until(
          'the first endpoint carries the subscription again, the second none',
          () => first.openConnections() === 1 && second.openConnections() === 0,
        );
        assert.ok(back < RETURN_MS + 300, `returned after ${Math.round(back)} ms`);
        assert.equal(connections(second), 1, 'the second was left, not failed and reopened');
        assert.ok(await flowing(first), 'slots arrive through the first endpoint');
        await chain.close();
        assert.deepEqual(await waiting, { status: 'pending' });
      } finally {
        await close();
      }
    });
  },
});

// EVM: the embedded anvil behind the proxy; the gateway's nonces are in its database.
chainFaults<TestEvm>({
  name: 'EVM',
  chain: 'evm',
  start: async () => {
    const evm = await startTestEvm();
    return {
      ...evm,
      close: async () => {
        await evm.close();
        evm.dispose();
      },
    };
  },
  rpcUrl: (evm) => evm.anvil.rpcUrl,
  pubsubUrl: () => undefined,
  routed: (evm, urls) => {
    const [rpcUrl] = urls as [string];
    return new EvmAdapter({
      info: { ...evm.adapter.info, rpcUrl },
      rpcUrl,
      endpoints: new RpcEndpoints({
        network: evm.adapter.info.id,
        urls,
        timeoutMs: TIMEOUT_MS,
        downMs: DOWN_MS,
      }),
      rpcTimeoutMs: TIMEOUT_MS,
      chainId: 31337, // anvil's
      faucet: evm.adapter.faucet,
      pollIntervalMs: 20,
    });
  },
  money: (evm) => evmFamily(evm.anvil.rpcUrl),
  broadcastFault: { kind: 'http-error', status: 503, match: 'eth_sendRawTransaction' },
  broadcastMethod: 'eth_sendRawTransaction',
  confirmMethod: 'eth_getTransactionReceipt',
  maxFee: 10n ** 15n,
  minedCount: (evm, address) =>
    createPublicClient({ transport: http(evm.anvil.rpcUrl), cacheTime: 0 }).getTransactionCount({
      address: address as Hex,
    }),
  only: (context) => {
    it('answers GET /token/info 503 CHAIN_UNAVAILABLE when the contract calls fail, not 404 for a real token', async () => {
      const { raw: evm, gw, buyer, proxy, recover } = context();
      const info = () =>
        gw.app.inject({ method: 'GET', url: `/token/info/${evm.usdc.address}`, headers: bearer(buyer.key) });
      // The code is read, then every eth_call (decimals, totalSupply, name…) fails at the endpoint.
      proxy.set({ kind: 'http-error', status: 503, match: 'eth_call' });
      const refused = await info();
      assert.equal(refused.statusCode, 503, refused.body);
      assert.equal(refused.json().error.code, 'CHAIN_UNAVAILABLE');

      await recover();
      const answered = await info();
      assert.equal(answered.statusCode, 200, answered.body);
      assert.deepEqual([answered.json().symbol, answered.json().decimals], ['USDC', 6]);
    });

    it('answers POST /faucet 503 CHAIN_UNAVAILABLE promptly while anvil stalls, and funds once it answers', async () => {
      const { raw: evm, proxy, recover } = context();
      // The faucet's own client (anvil's dev account) goes through the same endpoint list as the adapter.
      const endpoints = new RpcEndpoints({
        network: evm.adapter.info.id,
        urls: [proxy.url],
        timeoutMs: TIMEOUT_MS,
        downMs: DOWN_MS,
      });
      const local = anvilAdapter({
        rpcUrl: proxy.url,
        wsUrl: undefined,
        client: createAnvilClient(endpoints),
        endpoints,
        operator: evm.operator as Address,
        usdc: undefined,
        pollIntervalMs: 20,
      });
      const faucetGateway = await startTestGateway({ networks: new NetworkRegistry([local]) });
      try {
        const caller = await faucetGateway.newCaller();
        const address = `0x${'ab'.repeat(20)}`;
        const fund = () =>
          faucetGateway.app.inject({
            method: 'POST',
            url: '/faucet',
            headers: bearer(caller.key),
            payload: { address, amount: 1 },
          });
        proxy.set({ kind: 'hang' });
        const started = performance.now();
        const refused = await fund();
        const ms = performance.now() - started;
        assert.equal(refused.statusCode, 503, refused.body);
        assert.equal(refused.json().error.code, 'CHAIN_UNAVAILABLE');
        assert.ok(ms < PROMPT_MS, `answered after ${Math.round(ms)} ms`);

        await recover();
        const before = await evmFamily(evm.anvil.rpcUrl).balance(address);
        const funded = await fund();
        assert.equal(funded.statusCode, 200, funded.body);
        assert.equal(await evmFamily(evm.anvil.rpcUrl).balance(address), before + ETH);
      } finally {
        await faucetGateway.close();
        await local.close();
      }
    });
  },
});

function routed(localnet: Localnet, urls: string[], wsUrl: string | undefined): SolanaAdapter {
  return solanaAdapterFor(localnet, { urls, wsUrl, timeoutMs: TIMEOUT_MS, downMs: DOWN_MS, slotMs: SLOT_MS });
}

/** A PubSub proxy's URL, and a proxy in front of the localnet's PubSub endpoint. */
const ws = (proxy: FaultProxy) => proxy.url.replace(/^http/, 'ws');
const pubsubProxy = (localnet: Localnet) => startFaultProxy(localnet.wsUrl.replace(/^ws/, 'http'));
/** Two PubSub proxies in front of the localnet, and an adapter subscribing through them in that order. */
async function twoPubsubEndpoints(localnet: Localnet, options: { slotFeedReturnMs?: number } = {}) {
  const first = await pubsubProxy(localnet);
  const second = await pubsubProxy(localnet);
  const chain = solanaAdapterFor(localnet, {
    urls: [localnet.rpcUrl],
    wsUrls: [ws(first), ws(second)],
    timeoutMs: TIMEOUT_MS,
    downMs: DOWN_MS,
    slotMs: SLOT_MS,
    ...options,
  });
  const close = async () => {
    await chain.close();
    await first.close();
    await second.close();
  };
  return { first, second, chain, close };
}
// Client frames are masked, so what the proxy can read is each connection's upgrade request.
const connections = (proxy: FaultProxy) => proxy.forwarded('HTTP/1.1');
/** Polls `condition` every 10 ms for up to 5 s; answers how long it took to hold. */
const until = async (what: string, condition: () => boolean) => {
  const started = performance.now();
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(condition(), what);
  return performance.now() - started;
};
/** Slot notifications (or anything) reaching the gateway through `proxy` within `ms`. */
const flowing = async (proxy: FaultProxy, ms = 300) => {
  const before = proxy.delivered();
  await new Promise((resolve) => setTimeout(resolve, ms));
  return proxy.delivered() > before;
};
