import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Localnet, startLocalnet } from '@gate402/localnet';
import type { LightMyRequestResponse } from 'fastify';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import type { SolanaAdapter } from '../../../src/chains/solana/solana-adapter.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { type FaultMode, type FaultProxy, startFaultProxy } from '../../support/fault-proxy.ts';
import { solanaAdapterFor } from '../../support/solana-adapter-for.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

const LAMPORTS = 1_000_000_000n;
/** Short limits so a test sees the behaviour in well under a second; production defaults are 8 s / 2 s. */
const TIMEOUT_MS = 300;
const DOWN_MS = 400;
/** What "promptly" means here: a little over one time limit, never the 10 s confirmation wait. */
const PROMPT_MS = 1_500;
/** The localnet's slot length here, and the adapter's silence limit for it: ten slots, at least TIMEOUT_MS. */
const SLOT_MS = 50;
const SILENCE_MS = Math.max(TIMEOUT_MS, 10 * SLOT_MS);

/**
 * A real TCP proxy between the gateway and a real localnet (RPC and PubSub), dropping, stalling,
 * erroring and flapping: requests answer 503 CHAIN_UNAVAILABLE promptly, a payment stored before an
 * outage is finished once after it, /readyz follows the chain, and a second endpoint takes over.
 */
describe('chain RPC failures through a fault-injecting proxy', () => {
  let localnet: Localnet;
  let rpcProxy: FaultProxy;
  let wsProxy: FaultProxy;
  let gw: TestGateway;
  let reconciler: PaymentReconciler;
  let direct: SolanaAdapter;
  let buyer: { key: string; wallet: string };
  let seller: { key: string; wallet: string };

  const fault = (mode: FaultMode) => {
    rpcProxy.set(mode);
    wsProxy.set(mode);
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
  const balance = (address: string) => direct.getBalance(address);
  /**
   * Ends the fault and waits until the endpoint is asked again: calls still in flight from the outage
   * may time out (and mark it down) up to TIMEOUT_MS later, then it is skipped for DOWN_MS.
   */
  const recover = async () => {
    fault({ kind: 'pass' });
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + DOWN_MS + 100));
  };
  /** A PubSub proxy's URL, and a proxy in front of the localnet's PubSub endpoint. */
  const ws = (proxy: FaultProxy) => proxy.url.replace(/^http/, 'ws');
  const pubsubProxy = () => startFaultProxy(localnet.wsUrl.replace(/^ws/, 'http'));
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

  before(async () => {
    // 50 ms slots: a blockhash lasts 7.5 s, longer than the outages here.
    localnet = await startLocalnet({ port: 0, slotMs: SLOT_MS, finalizedDepth: 8 });
    rpcProxy = await startFaultProxy(localnet.rpcUrl);
    wsProxy = await startFaultProxy(localnet.wsUrl.replace(/^ws/, 'http'));
    const chain = routed(localnet, [rpcProxy.url], wsProxy.url.replace(/^http/, 'ws'));
    direct = routed(localnet, [localnet.rpcUrl], undefined);
    gw = await startTestGateway({
      networks: new NetworkRegistry([chain]),
      confirmTimeoutMs: 10_000,
      readiness: [{ name: localnet.network, check: () => chain.ping() }],
    });
    reconciler = new PaymentReconciler({
      store: gw.store,
      networks: gw.networks,
      ledger: gw.services.ledger,
      instanceId: 'reconciler',
      recheckMs: 0,
    });
    buyer = await party();
    seller = await party();
    localnet.airdrop(buyer.wallet, 10n * LAMPORTS);
  });
  after(async () => {
    await gw?.close();
    await direct?.close();
    await rpcProxy?.close();
    await wsProxy?.close();
    await localnet?.close();
  });

  async function party() {
    // Enterprise with a high rate: a caller retrying 503s while the endpoint flaps must not meet the limit.
    const caller = await gw.newCaller('enterprise', 100_000);
    const created = await post(caller.key, '/wallets', { chain: 'solana' });
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
      assert.equal(notReady.json().checks[localnet.network].ok, false);
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
    const broadcastsBefore = rpcProxy.forwarded('"sendTransaction"');
    // Everything up to the broadcast works; the broadcast itself meets a dead endpoint.
    fault({ kind: 'drop', match: '"sendTransaction"' });

    const { response, ms } = await timed(() => send(0.2, { 'idempotency-key': 'outage-1' }));
    assert.equal(response.statusCode, 200, response.body);
    assert.ok(ms < PROMPT_MS, `answered after ${Math.round(ms)} ms`);
    const { paymentId, status, paymentProof } = response.json();
    assert.equal(status, 'pending');
    assert.match(paymentProof, /^0x/);
    assert.equal((await get(buyer.key, `/payment/status/${paymentId}`)).json().status, 'pending');

    // A retry with the same key while the chain is still down answers the same payment, not another.
    const retried = await send(0.2, { 'idempotency-key': 'outage-1' });
    assert.equal(retried.json().paymentId, paymentId);
    // The reconciler cannot resend yet either, and gives up without harm.
    await reconciler.runOnce();
    assert.equal(rpcProxy.forwarded('"sendTransaction"'), broadcastsBefore, 'no broadcast got through');
    assert.equal(await balance(seller.wallet), sellerBefore);

    await recover();
    await reconcileUntilSettled();
    const settled = (await get(buyer.key, `/payment/status/${paymentId}`)).json();
    assert.ok(['confirmed', 'finalized'].includes(settled.status), settled.status);
    assert.equal(await balance(seller.wallet), sellerBefore + 200_000_000n, 'paid exactly once');
    const fee = buyerBefore - (await balance(buyer.wallet)) - 200_000_000n;
    assert.ok(fee > 0n && fee < 100_000n, `buyer paid the amount once plus a fee of ${fee} lamports`);
    // Resending the stored bytes again changes nothing.
    await reconciler.runOnce();
    assert.equal(await balance(seller.wallet), sellerBefore + 200_000_000n);
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
    // A payment stored while the endpoint was down lands once when resent, or, if its blockhash ran out
    // first, expires without landing; never both, never twice.
    let confirmed = 0n;
    for (const id of ids) {
      const status = (await get(buyer.key, `/payment/status/${id}`)).json().status;
      assert.ok(['confirmed', 'finalized', 'expired'].includes(status), `${id} is ${status}`);
      if (status !== 'expired') confirmed += 1n;
    }
    assert.ok(confirmed >= 1n, 'payments went through between the flaps');
    assert.equal(
      await balance(seller.wallet),
      sellerBefore + confirmed * 50_000_000n,
      'each paid at most once',
    );
  });

  it('ends a confirmation wait already running once every endpoint is down: the send answers submitted at once and is paid once', async () => {
    const sellerBefore = await balance(seller.wallet);
    // The broadcast goes through; the checks of its confirmation meet a stalled endpoint, which is then
    // marked down while the send still waits. Without this, the send held on for its 10 s wait.
    fault({ kind: 'hang', match: '"getSignatureStatuses"' });
    const { response, ms } = await timed(() => send(0.03, { 'idempotency-key': 'wait-cut-1' }));
    assert.equal(response.statusCode, 200, response.body);
    assert.ok(ms < PROMPT_MS, `answered after ${Math.round(ms)} ms`);
    const { paymentId, status } = response.json();
    assert.equal(status, 'submitted');

    await recover();
    const retried = await send(0.03, { 'idempotency-key': 'wait-cut-1' });
    assert.equal(retried.json().paymentId, paymentId, 'a retry finds the same payment');
    await reconcileUntilSettled();
    const settled = (await get(buyer.key, `/payment/status/${paymentId}`)).json();
    assert.ok(['confirmed', 'finalized'].includes(settled.status), settled.status);
    assert.equal(await balance(seller.wallet), sellerBefore + 30_000_000n, 'paid exactly once');
  });

  it('moves the slot subscription to the next PubSub endpoint when the first drops, and back when that one fails', async () => {
    const first = await pubsubProxy();
    const second = await pubsubProxy();
    const chain = solanaAdapterFor(localnet, {
      urls: [localnet.rpcUrl],
      wsUrls: [ws(first), ws(second)],
      timeoutMs: TIMEOUT_MS,
      downMs: DOWN_MS,
      slotMs: SLOT_MS,
    });
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
      await chain.close();
      await first.close();
      await second.close();
    }
  });

  it('moves the slot subscription to the next PubSub endpoint within its silence limit when the first stays open but sends nothing, and sends still confirm', async () => {
    const first = await pubsubProxy();
    // Also a proxy, passing everything, only so the test can see which endpoint carries the feed.
    const second = await pubsubProxy();
    const chain = solanaAdapterFor(localnet, {
      urls: [localnet.rpcUrl],
      wsUrls: [ws(first), ws(second)],
      timeoutMs: TIMEOUT_MS,
      downMs: DOWN_MS,
      slotMs: SLOT_MS,
    });
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
      assert.equal(await balance(to), 20_000_000n);
      await chain.close();
      assert.deepEqual(await waiting, { status: 'pending' });
    } finally {
      await gateway.close();
      await chain.close();
      await first.close();
      await second.close();
    }
  });

  it('moves the slot subscription back to the preferred PubSub endpoint once it recovers, while the fallback still works', async () => {
    const RETURN_MS = 800;
    const first = await pubsubProxy();
    const second = await pubsubProxy();
    const chain = solanaAdapterFor(localnet, {
      urls: [localnet.rpcUrl],
      wsUrls: [ws(first), ws(second)],
      timeoutMs: TIMEOUT_MS,
      downMs: DOWN_MS,
      slotMs: SLOT_MS,
      slotFeedReturnMs: RETURN_MS,
    });
    try {
      const waiting = chain.waitForConfirmation('1'.repeat(64), BigInt(Number.MAX_SAFE_INTEGER), 20_000);
      await until('the first endpoint carries the subscription', () => first.openConnections() === 1);

      first.set({ kind: 'drop' });
      await until('the second endpoint takes over', () => second.openConnections() === 1);
      // Tries of the first while it still refuses leave the feed where it is.
      await new Promise((resolve) => setTimeout(resolve, 2 * RETURN_MS + 100));
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
      await chain.close();
      await first.close();
      await second.close();
    }
  });

  it('fails over to the next endpoint when the first is down, and back when it recovers', async () => {
    const down = await startFaultProxy(localnet.rpcUrl);
    const up = await startFaultProxy(localnet.rpcUrl);
    const chain = routed(localnet, [down.url, up.url], undefined);
    try {
      down.set({ kind: 'hang' });
      const started = performance.now();
      assert.equal(typeof (await chain.getBlockHeight()), 'bigint');
      assert.ok(performance.now() - started < PROMPT_MS);
      // Skipped while it is down: the next call goes straight to the second endpoint.
      const before = up.forwarded('getBalance');
      const quick = performance.now();
      await chain.getBalance(buyer.wallet);
      assert.ok(performance.now() - quick < TIMEOUT_MS, 'the stalled endpoint was not waited for again');
      assert.equal(up.forwarded('getBalance'), before + 1);

      down.set({ kind: 'pass' });
      await new Promise((resolve) => setTimeout(resolve, DOWN_MS + 50));
      await chain.getBalance(seller.wallet);
      assert.equal(down.forwarded('getBalance'), 1, 'the first endpoint is preferred again');
    } finally {
      await chain.close();
      await down.close();
      await up.close();
    }
  });
});

function routed(localnet: Localnet, urls: string[], wsUrl: string | undefined): SolanaAdapter {
  return solanaAdapterFor(localnet, { urls, wsUrl, timeoutMs: TIMEOUT_MS, downMs: DOWN_MS, slotMs: SLOT_MS });
}
