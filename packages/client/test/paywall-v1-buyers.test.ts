import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner, getBase58Decoder } from '@solana/kit';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import axios from 'axios';
import { generatePrivateKey } from 'viem/accounts';
import { withPaymentInterceptor } from 'x402-axios';
import { createSigner, decodeXPaymentResponse, wrapFetchWithPayment } from 'x402-fetch';
import { Gate402Client } from '../src/gate402-client.ts';
import { GATE402_NATIVE_SCHEME } from '../src/x402/gate402-native.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';
import { type SellerApp, startSellerApp } from './support/seller-apps.ts';

/** A stock x402 1.x Solana signer (the 64-byte secret key in base58), and its address. */
async function v1SolanaBuyer() {
  const key = await generateKeyPairSigner(true);
  const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', key.keyPair.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey('pkcs8', key.keyPair.privateKey));
  const secret = getBase58Decoder().decode(new Uint8Array([...pkcs8.slice(-32), ...publicKey]));
  return { address: key.address, signer: await createSigner('solana-devnet', secret) };
}

/**
 * The most installed x402 buyers, `x402-fetch` and `x402-axios` (x402 1.x), against gate402's seller
 * paywall on the embedded chains. They read the 402's body, validate every entry of `accepts` and
 * refuse all of it for one they do not know: the body carries only `exact` under v1 network names (the
 * localnet as `solana-devnet`), never gate402's own scheme or a CAIP-2 id; the payment comes back in
 * X-PAYMENT, is settled as v1 by the gateway's facilitator and answered X-PAYMENT-RESPONSE.
 */
describe('gate402 paywall with stock x402 v1 buyers (x402-fetch, x402-axios)', () => {
  let gateway: InProcessGateway;
  let premium: Gate402Client;
  let funder: Gate402Client;
  let solanaRpc: string;
  let usdcSol: string;
  let usdcEvm: string;
  const apps: SellerApp[] = [];

  before(async () => {
    gateway = await startGateway();
    premium = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    funder = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey() });
    const { networks } = await premium.networks();
    const localnet = networks.find((n) => n.family === 'solana' && n.isDefault);
    const anvil = networks.find((n) => n.id === 'eip155:31337');
    solanaRpc = localnet?.rpcUrl ?? '';
    usdcSol = localnet?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    usdcEvm = anvil?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    // GET /networks names the v1 name x402 v1 clients know each network by; the one table is the server's.
    assert.equal(localnet?.x402V1Network, 'solana-devnet');
    assert.equal(anvil?.x402V1Network, null);
    assert.deepEqual(localnet?.x402Aliases, ['solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1']);
    assert.deepEqual(anvil?.x402Aliases, []);
  });
  after(async () => {
    for (const app of apps) await app.close();
    await gateway?.close();
  });

  async function solanaSeller(): Promise<{ app: SellerApp; payTo: string }> {
    const payTo = (await premium.createWallet({ chain: 'solana' })).address;
    // The payee's token account exists (a first mint creates it).
    await premium.faucet({ address: payTo, amount: 0.01, token: 'USDC' });
    const app = await startSellerApp('express', premium, {
      price: '0.01',
      payTo,
      description: 'the forecast',
      exact: { asset: usdcSol, amount: '0.01' },
    });
    apps.push(app);
    return { app, payTo };
  }

  it('the v1 body lists exact under solana-devnet only; x402-fetch pays it, settled as v1, answered X-PAYMENT-RESPONSE, once', async () => {
    const { app, payTo } = await solanaSeller();
    const unpaid = await fetch(app.url);
    assert.equal(unpaid.status, 402);
    const body = (await unpaid.json()) as { x402Version: number; accepts: Record<string, unknown>[] };
    const feePayer = (await premium.facilitatorSupported()).kinds.find(
      (k) => k.network === 'solana-devnet' && k.x402Version === 1,
    )?.extra?.feePayer;
    assert.deepEqual(body, {
      x402Version: 1,
      error: 'payment required',
      accepts: [
        {
          scheme: 'exact',
          network: 'solana-devnet',
          maxAmountRequired: '10000',
          resource: app.url,
          description: 'the forecast',
          mimeType: '',
          payTo,
          maxTimeoutSeconds: 60,
          asset: usdcSol,
          extra: { feePayer },
        },
      ],
    });
    // The v2 header still offers both, gate402's own scheme first.
    const v2 = decodePaymentRequiredHeader(unpaid.headers.get('payment-required') ?? '');
    assert.deepEqual(
      v2.accepts.map((a) => a.scheme),
      [GATE402_NATIVE_SCHEME, 'exact'],
    );

    const buyer = await v1SolanaBuyer();
    await funder.faucet({ address: buyer.address, amount: 1, token: 'USDC' });
    const sent: string[] = [];
    const recording: typeof fetch = async (input, init) => {
      const header = new Headers(init?.headers).get('x-payment');
      if (header !== null) sent.push(header);
      return fetch(input, init);
    };
    const pay = wrapFetchWithPayment(recording, buyer.signer, 10_000n, undefined, {
      svmConfig: { rpcUrl: solanaRpc },
    });
    const paid = await pay(app.url);
    assert.equal(paid.status, 200, await paid.clone().text());
    assert.equal(paid.headers.get('payment-response'), null);
    const settled = decodeXPaymentResponse(paid.headers.get('x-payment-response') ?? '');
    assert.deepEqual(
      [settled.success, settled.network, settled.payer],
      [true, 'solana-devnet', buyer.address],
    );
    const served = (await paid.json()) as { payment: Record<string, unknown> };
    assert.deepEqual(
      [served.payment.scheme, served.payment.asset, served.payment.amount, served.payment.payer],
      ['exact', usdcSol, '0.01', buyer.address],
    );
    const received = await premium.paymentHistory(payTo, { type: 'received' });
    assert.deepEqual(
      received.payments.filter((p) => p.asset.address === usdcSol && p.sender === buyer.address).length,
      1,
    );

    // The same X-PAYMENT again: refused (the facilitator's v1 reason), never settled twice.
    assert.equal(sent.length, 1);
    const replay = await fetch(app.url, { headers: { 'x-payment': sent[0] ?? '' } });
    assert.equal(replay.status, 402);
    const refusal = (await replay.json()) as { error: string; accepts: unknown[] };
    assert.match(refusal.error, /^duplicate_settlement/);
    assert.equal(refusal.accepts.length, 1);
  });

  it('x402-axios pays the same kind of resource', async () => {
    const { app } = await solanaSeller();
    const buyer = await v1SolanaBuyer();
    await funder.faucet({ address: buyer.address, amount: 1, token: 'USDC' });
    const client = withPaymentInterceptor(axios.create(), buyer.signer, undefined, {
      svmConfig: { rpcUrl: solanaRpc },
    });
    const paid = await client.get(app.url);
    assert.equal(paid.status, 200);
    const settled = decodeXPaymentResponse(String(paid.headers['x-payment-response']));
    assert.deepEqual([settled.success, settled.payer], [true, buyer.address]);
  });

  it('a v1 payment for another amount, payee or network is refused with a v1 reason, nothing settled', async () => {
    const { app, payTo } = await solanaSeller();
    const body = (await (await fetch(app.url)).json()) as { accepts: Record<string, unknown>[] };
    const offered = body.accepts[0] as Record<string, unknown>;
    const buyer = await v1SolanaBuyer();
    await funder.faucet({ address: buyer.address, amount: 1, token: 'USDC' });
    // A seller's paywall that would have asked for less: the buyer's payment is one unit short.
    const { createPaymentHeader } = await import('x402/client');
    const short = await createPaymentHeader(
      buyer.signer,
      1,
      { ...offered, maxAmountRequired: '9999' } as never,
      { svmConfig: { rpcUrl: solanaRpc } },
    );
    const refused = await fetch(app.url, { headers: { 'x-payment': short } });
    assert.equal(refused.status, 402);
    assert.match(((await refused.json()) as { error: string }).error, /amount_mismatch/);
    // The same payment presented as if for another v1 network: no such option.
    const decoded = JSON.parse(Buffer.from(short, 'base64').toString()) as Record<string, unknown>;
    const elsewhere = Buffer.from(JSON.stringify({ ...decoded, network: 'base-sepolia' })).toString('base64');
    const other = await fetch(app.url, { headers: { 'x-payment': elsewhere } });
    assert.equal(other.status, 402);
    assert.match(((await other.json()) as { error: string }).error, /no payment option/);
    const received = await premium.paymentHistory(payTo, { type: 'received' });
    assert.equal(received.payments.filter((p) => p.sender === buyer.address).length, 0);
  });

  it('anvil (eip155:31337) has no v1 name: the v1 body lists nothing, and x402-fetch fails cleanly, not with a ZodError', async () => {
    const payTo = (await premium.createWallet({ chain: 'evm' })).address;
    const app = await startSellerApp('hono', premium, {
      price: '0.01',
      payTo,
      exact: { asset: usdcEvm, amount: '0.02', extra: { name: 'USD Coin', version: '2' } },
    });
    apps.push(app);
    const unpaid = await fetch(app.url);
    assert.deepEqual(((await unpaid.json()) as { accepts: unknown[] }).accepts, []);
    const signer = await createSigner('base-sepolia', generatePrivateKey());
    const pay = wrapFetchWithPayment(fetch, signer);
    const outcome = await pay(app.url).then(
      (response) => response.status,
      (error: unknown) => error as Error,
    );
    if (outcome instanceof Error) {
      assert.notEqual(outcome.name, 'ZodError', outcome.message);
      assert.doesNotMatch(outcome.message, /invalid_enum_value|invalid_union|Zod/i);
    } else {
      assert.equal(outcome, 402);
    }
  });
});
