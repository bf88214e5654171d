import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Localnet, startLocalnet } from '@gate402/localnet';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import type { PaymentRequirements } from '@x402/core/types';
import { ExactSvmScheme as SvmBuyerScheme } from '@x402/svm/exact/client';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import type { SolanaAdapter } from '../../../src/chains/solana/solana-adapter.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { type FaultProxy, startFaultProxy } from '../../support/fault-proxy.ts';
import { solanaAdapterFor } from '../../support/solana-adapter-for.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

const TIMEOUT_MS = 300;
const DOWN_MS = 400;
/** A little over one time limit: before the facilitator had one, a stalled endpoint held it for ever. */
const PROMPT_MS = 1_500;

/**
 * The x402 facilitator's own RPC calls (simulation, block height) go through the network's endpoint
 * list, with its time limit and failover: a stalled endpoint answers 503 CHAIN_UNAVAILABLE promptly
 * on verify and settle, nothing is claimed or paid, and the same payload settles once after recovery.
 */
describe('x402 facilitator through a fault-injecting proxy', () => {
  let localnet: Localnet;
  let proxy: FaultProxy;
  let chain: SolanaAdapter;
  let gw: TestGateway;
  let key: string;
  let seller: string;
  let feePayer: string;

  const post = (url: string, payload: object) =>
    gw.app.inject({ method: 'POST', url, headers: bearer(key), payload });
  const timed = async (work: () => ReturnType<typeof post>) => {
    const started = performance.now();
    const response = await work();
    return { response, ms: performance.now() - started };
  };
  const usdcOf = async (owner: string) =>
    (await solanaAdapterFor(localnet, { urls: [localnet.rpcUrl] }).getTokenAccounts(owner)).find(
      (a) => a.mint === localnet.usdcMint.address,
    )?.amount ?? 0n;

  before(async () => {
    localnet = await startLocalnet({ port: 0, slotMs: 50, finalizedDepth: 8 });
    proxy = await startFaultProxy(localnet.rpcUrl);
    chain = solanaAdapterFor(localnet, {
      urls: [proxy.url],
      timeoutMs: TIMEOUT_MS,
      downMs: DOWN_MS,
      slotMs: 50,
    });
    gw = await startTestGateway({ networks: new NetworkRegistry([chain]), confirmTimeoutMs: 10_000 });
    await gw.services.facilitator.start();
    const caller = await gw.newCaller('premium');
    key = caller.key;
    const wallet = await post('/wallets', { chain: 'solana' });
    assert.equal(wallet.statusCode, 200, wallet.body);
    seller = wallet.json().address;
    const supported = await gw.app.inject({
      method: 'GET',
      url: '/facilitator/supported',
      headers: bearer(key),
    });
    feePayer = supported.json().kinds[0].extra.feePayer;
    // The adapter here has no faucet: the fee payer and both token accounts are funded on the chain.
    localnet.airdrop(feePayer, 1_000_000_000n);
    await localnet.mintUsdc(seller, 10_000n);
  });
  after(async () => {
    await gw?.close();
    await chain?.close();
    await proxy?.close();
    await localnet?.close();
  });

  /** A v2 request body: 250,000 atomic USDC from a new buyer holding 1 USDC, signed by stock @x402/svm. */
  async function paymentFromNewBuyer() {
    const buyer = await generateKeyPairSigner();
    await localnet.mintUsdc(buyer.address, 1_000_000n);
    const requirements: PaymentRequirements = {
      scheme: 'exact',
      network: SOLANA_DEVNET_ID as PaymentRequirements['network'],
      asset: localnet.usdcMint.address,
      amount: '250000',
      payTo: seller,
      maxTimeoutSeconds: 60,
      extra: { feePayer },
    };
    const client = x402Client.fromConfig({
      schemes: [
        { network: SOLANA_DEVNET_ID, client: new SvmBuyerScheme(buyer, { rpcUrl: localnet.rpcUrl }) },
      ],
      spendControls: false,
    });
    const paymentPayload = await client.createPaymentPayload({
      x402Version: 2,
      resource: { url: 'https://shop.example/r' },
      accepts: [requirements],
    });
    return {
      buyer: buyer.address,
      body: { x402Version: 2, paymentPayload, paymentRequirements: requirements },
    };
  }

  it('answers verify and settle 503 CHAIN_UNAVAILABLE promptly while the endpoint stalls, then settles once', async () => {
    const { buyer, body } = await paymentFromNewBuyer();
    proxy.set({ kind: 'hang' });

    const verify = await timed(() => post('/facilitator/verify', body));
    assert.equal(verify.response.statusCode, 503, verify.response.body);
    assert.ok(verify.ms < PROMPT_MS, `verify answered after ${Math.round(verify.ms)} ms`);
    const error = verify.response.json().error;
    assert.equal(error.code, 'CHAIN_UNAVAILABLE');
    assert.ok(Number.isInteger(error.retryAfter) && error.retryAfter >= 1, JSON.stringify(error));
    assert.ok(!verify.response.body.includes(String(proxy.port)), 'the RPC URL stays out of the answer');

    // The endpoint is now marked down for the adapter and the facilitator alike: settle is refused at once.
    const settle = await timed(() => post('/facilitator/settle', body));
    assert.equal(settle.response.statusCode, 503, settle.response.body);
    assert.equal(settle.response.json().error.code, 'CHAIN_UNAVAILABLE');
    assert.ok(settle.ms < TIMEOUT_MS, `settle answered after ${Math.round(settle.ms)} ms`);
    const portfolio = await gw.app.inject({
      method: 'GET',
      url: `/portfolio/${seller}`,
      headers: bearer(key),
    });
    assert.equal(portfolio.statusCode, 503, portfolio.body);

    proxy.set({ kind: 'pass' });
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + DOWN_MS + 100));
    assert.equal(await usdcOf(buyer), 1_000_000n, 'nothing was paid during the outage');
    const settled = await post('/facilitator/settle', body);
    assert.equal(settled.statusCode, 200, settled.body);
    assert.deepEqual([settled.json().success, settled.json().payer], [true, buyer], settled.body);
    const again = await post('/facilitator/settle', body);
    assert.equal(again.json().errorReason, 'duplicate_settlement', again.body);
    assert.equal(await usdcOf(buyer), 750_000n, 'paid exactly once');
  });
});
