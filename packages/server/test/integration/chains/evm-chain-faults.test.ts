import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Address, createPublicClient, http } from 'viem';
import { createAnvilClient } from '../../../src/chains/evm/anvil-client.ts';
import { ANVIL_CHAIN_ID } from '../../../src/chains/evm/anvil-process.ts';
import { anvilAdapter } from '../../../src/chains/evm/embedded-evm.ts';
import { EvmAdapter } from '../../../src/chains/evm/evm-adapter.ts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { RpcEndpoints } from '../../../src/chains/rpc-endpoints.ts';
import { PaymentReconciler } from '../../../src/workers/payment-reconciler.ts';
import { type FaultProxy, startFaultProxy } from '../../support/fault-proxy.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

const ETH = 10n ** 18n;
const TIMEOUT_MS = 300;
const DOWN_MS = 400;
const PROMPT_MS = 1_500;

/**
 * The same faults between the gateway and a real anvil: a stalled endpoint answers 503 promptly and
 * /readyz follows it; a custodial EVM send whose broadcast fails keeps its database nonce, answers
 * pending at once, and is mined once after recovery.
 */
describe('EVM RPC failures through a fault-injecting proxy', () => {
  let evm: TestEvm;
  let proxy: FaultProxy;
  let chain: EvmAdapter;
  let gw: TestGateway;
  let reconciler: PaymentReconciler;
  let buyer: { key: string; wallet: string };
  let seller: { key: string; wallet: string };
  let direct: ReturnType<typeof createPublicClient>;

  before(async () => {
    evm = await startTestEvm();
    proxy = await startFaultProxy(evm.anvil.rpcUrl);
    direct = createPublicClient({ transport: http(evm.anvil.rpcUrl), cacheTime: 0 });
    chain = new EvmAdapter({
      info: { ...evm.adapter.info, rpcUrl: proxy.url },
      rpcUrl: proxy.url,
      endpoints: new RpcEndpoints({
        network: evm.adapter.info.id,
        urls: [proxy.url],
        timeoutMs: TIMEOUT_MS,
        downMs: DOWN_MS,
      }),
      rpcTimeoutMs: TIMEOUT_MS,
      chainId: ANVIL_CHAIN_ID,
      faucet: evm.adapter.faucet,
      pollIntervalMs: 20,
    });
    gw = await startTestGateway({
      networks: new NetworkRegistry([chain]),
      confirmTimeoutMs: 5_000,
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
    buyer = await party(ETH);
    seller = await party(0n);
  });
  after(async () => {
    await gw?.close();
    await chain?.close();
    await proxy?.close();
    await evm?.close();
    evm?.dispose();
  });

  async function party(funds: bigint) {
    const caller = await gw.newCaller();
    const created = await gw.app.inject({
      method: 'POST',
      url: '/wallets',
      headers: bearer(caller.key),
      payload: { chain: 'evm' },
    });
    assert.equal(created.statusCode, 200, created.body);
    const wallet = created.json().address as string;
    if (funds > 0n) await evm.adapter.faucet?.fundNative(wallet, funds);
    return { key: caller.key, wallet };
  }
  const send = (amount: number) =>
    gw.app.inject({
      method: 'POST',
      url: '/payment/send',
      headers: bearer(buyer.key),
      payload: { walletAddress: buyer.wallet, recipientAddress: seller.wallet, amount },
    });
  const balanceOf = (address: string) => direct.getBalance({ address: address as `0x${string}` });
  const recover = async () => {
    proxy.set({ kind: 'pass' });
    // Calls in flight from the outage may still time out (and mark the endpoint down) after it ends.
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + DOWN_MS + 100));
  };

  it('answers 503 CHAIN_UNAVAILABLE promptly while the endpoint stalls, and is ready again after', async () => {
    proxy.set({ kind: 'hang' });
    const started = performance.now();
    const refused = await send(0.01);
    const ms = performance.now() - started;
    assert.equal(refused.statusCode, 503, refused.body);
    assert.equal(refused.json().error.code, 'CHAIN_UNAVAILABLE');
    assert.ok(refused.json().error.retryAfter >= 1);
    assert.ok(ms < PROMPT_MS, `answered after ${Math.round(ms)} ms`);
    assert.equal((await gw.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 503);

    await recover();
    assert.equal((await gw.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    assert.equal(await balanceOf(seller.wallet), 0n, 'nothing was paid');
  });

  it('keeps a send whose broadcast failed pending with its nonce, and mines it once after recovery', async () => {
    const sentBefore = await direct.getTransactionCount({ address: buyer.wallet as `0x${string}` });
    proxy.set({ kind: 'http-error', status: 503, match: 'eth_sendRawTransaction' });
    const started = performance.now();
    const response = await send(0.25);
    assert.ok(performance.now() - started < PROMPT_MS);
    assert.equal(response.statusCode, 200, response.body);
    const { paymentId, status } = response.json();
    assert.equal(status, 'pending');
    await reconciler.runOnce();
    assert.equal(await balanceOf(seller.wallet), 0n);

    await recover();
    for (let pass = 0; pass < 100; pass++) {
      await reconciler.runOnce();
      const now = (
        await gw.app.inject({
          method: 'GET',
          url: `/payment/status/${paymentId}`,
          headers: bearer(buyer.key),
        })
      ).json().status;
      if (now === 'confirmed' || now === 'finalized') break;
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    const settled = await gw.app.inject({
      method: 'GET',
      url: `/payment/status/${paymentId}`,
      headers: bearer(buyer.key),
    });
    assert.ok(['confirmed', 'finalized'].includes(settled.json().status), settled.body);
    assert.equal(await balanceOf(seller.wallet), ETH / 4n, 'paid exactly once');
    assert.equal(
      await direct.getTransactionCount({ address: buyer.wallet as `0x${string}` }),
      sentBefore + 1,
      'one nonce used',
    );

    // The next send takes the next nonce and lands at once.
    const next = await send(0.01);
    assert.equal(next.statusCode, 200, next.body);
    assert.equal(next.json().status, 'confirmed');
  });

  it('ends a confirmation wait already running once the endpoint is down: the send answers submitted at once, mined once', async () => {
    const sellerBefore = await balanceOf(seller.wallet);
    const sentBefore = await direct.getTransactionCount({ address: buyer.wallet as `0x${string}` });
    // The broadcast goes through; the receipt polls meet a stalled endpoint, marked down mid-wait.
    // Without ending the wait there, the send held on for its 5 s confirmation wait.
    proxy.set({ kind: 'hang', match: 'eth_getTransactionReceipt' });
    const started = performance.now();
    const response = await send(0.125);
    const ms = performance.now() - started;
    assert.equal(response.statusCode, 200, response.body);
    assert.ok(ms < PROMPT_MS, `answered after ${Math.round(ms)} ms`);
    const { paymentId, status } = response.json();
    assert.equal(status, 'submitted');

    await recover();
    for (let pass = 0; pass < 100; pass++) {
      await reconciler.runOnce();
      const now = (
        await gw.app.inject({
          method: 'GET',
          url: `/payment/status/${paymentId}`,
          headers: bearer(buyer.key),
        })
      ).json().status;
      if (now === 'confirmed' || now === 'finalized') break;
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    const settled = await gw.app.inject({
      method: 'GET',
      url: `/payment/status/${paymentId}`,
      headers: bearer(buyer.key),
    });
    assert.ok(['confirmed', 'finalized'].includes(settled.json().status), settled.body);
    assert.equal(await balanceOf(seller.wallet), sellerBefore + ETH / 8n, 'paid exactly once');
    assert.equal(
      await direct.getTransactionCount({ address: buyer.wallet as `0x${string}` }),
      sentBefore + 1,
      'one nonce used',
    );
  });

  it('answers GET /token/info 503 CHAIN_UNAVAILABLE when the contract calls fail, not 404 for a real token', async () => {
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
      const before = await balanceOf(address);
      const funded = await fund();
      assert.equal(funded.statusCode, 200, funded.body);
      assert.equal(await balanceOf(address), before + ETH);
    } finally {
      await faucetGateway.close();
      await local.close();
    }
  });
});
