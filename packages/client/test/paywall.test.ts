import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader } from '@x402/core/http';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { Hono } from 'hono';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { expressPaywall } from '../src/express.ts';
import { honoPaywall } from '../src/hono.ts';
import {
  GATE402_NATIVE_SCHEME,
  Gate402Client,
  PaymentDeclinedError,
  payingFetch,
  paymentResponseOf,
} from '../src/index.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';
import { type Framework, type SellerApp, startSellerApp } from './support/seller-apps.ts';

/**
 * Seller middleware and buyer fetch against one real gateway (localnet and anvil): two accounts, as a
 * seller and a buyer would have, paying native SOL and ETH over HTTP.
 */
describe('gate402 paywall and paying fetch', () => {
  let gateway: InProcessGateway;
  let seller: Gate402Client;
  let buyer: Gate402Client;
  const wallets = { sellerSol: '', sellerEth: '', buyerSol: '', buyerEth: '' };
  const apps: SellerApp[] = [];

  before(async () => {
    gateway = await startGateway();
    seller = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey() });
    buyer = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey() });
    wallets.sellerSol = (await seller.createWallet({ chain: 'solana' })).address;
    wallets.sellerEth = (await seller.createWallet({ chain: 'evm' })).address;
    wallets.buyerSol = (await buyer.createWallet({ chain: 'solana' })).address;
    wallets.buyerEth = (await buyer.createWallet({ chain: 'evm' })).address;
    await buyer.faucet({ address: wallets.buyerSol, amount: 5 });
    await buyer.faucet({ address: wallets.buyerEth, amount: 5 });
  });
  after(async () => {
    for (const app of apps) await app.close();
    await gateway?.close();
  });

  async function sellerApp(framework: Framework, price: string, payTo: string): Promise<SellerApp> {
    const app = await startSellerApp(framework, seller, { price, payTo, description: 'the forecast' });
    apps.push(app);
    return app;
  }

  for (const framework of ['express', 'fastify', 'hono'] as const) {
    it(`${framework}: answers 402 with the x402 offer, then 200 once the buyer pays native SOL`, async () => {
      const app = await sellerApp(framework, '0.01', wallets.sellerSol);

      const unpaid = await fetch(app.url);
      assert.equal(unpaid.status, 402);
      const challenge = decodePaymentRequiredHeader(unpaid.headers.get('payment-required') ?? '');
      const { networks } = await seller.networks();
      const solana = networks.find((n) => n.family === 'solana' && n.isDefault);
      assert.deepEqual(challenge, {
        x402Version: 2,
        error: 'payment required',
        resource: { url: app.url, description: 'the forecast' },
        accepts: [
          {
            scheme: GATE402_NATIVE_SCHEME,
            network: solana?.id,
            asset: 'native',
            amount: '10000000',
            payTo: wallets.sellerSol,
            maxTimeoutSeconds: 60,
            extra: { currency: 'SOL', decimals: 9 },
          },
        ],
      });
      // The body is x402 v1's, whose clients know only `exact`: gate402's own scheme is offered in v2 alone.
      assert.deepEqual(await unpaid.json(), { x402Version: 1, error: 'payment required', accepts: [] });

      const sent: string[] = [];
      const pay = payingFetch({
        gateway: buyer,
        wallet: wallets.buyerSol,
        maxAmount: '0.05',
        onPayment: (payment) => sent.push(payment.signature),
      });
      const paid = await pay(app.url);
      assert.equal(paid.status, 200);
      const body = (await paid.json()) as { forecast: string; payment: Record<string, unknown> };
      assert.equal(body.forecast, 'sunny');
      assert.equal(sent.length, 1);
      assert.equal(body.payment.transaction, sent[0]);
      assert.equal(body.payment.payer, wallets.buyerSol);
      assert.equal(body.payment.amount, '0.01');
      assert.deepEqual(paymentResponseOf(paid), {
        success: true,
        payer: wallets.buyerSol,
        transaction: sent[0],
        network: solana?.id,
      });
      const received = await seller.paymentHistory(wallets.sellerSol, { type: 'received' });
      assert.ok(
        received.payments.some((p) => p.signature === sent[0] && p.amount === 0.01 && p.resource === app.url),
      );
    });
  }

  it('refuses a replayed proof with 402 and the reason, and serves once per payment', async () => {
    const app = await sellerApp('express', '0.01', wallets.sellerSol);
    let proofHeader = '';
    const recording: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      proofHeader = request.headers.get('payment-signature') ?? proofHeader;
      return fetch(request);
    };
    const pay = payingFetch({
      gateway: buyer,
      wallet: wallets.buyerSol,
      maxAmount: '0.01',
      fetch: recording,
    });
    assert.equal((await pay(app.url)).status, 200);
    assert.equal(decodePaymentSignatureHeader(proofHeader).accepted.scheme, GATE402_NATIVE_SCHEME);

    const replay = await fetch(app.url, { headers: { 'payment-signature': proofHeader } });
    assert.equal(replay.status, 402);
    const error = decodePaymentRequiredHeader(replay.headers.get('payment-required') ?? '').error ?? '';
    assert.match(error, /^INVALID_PAYMENT_PROOF: /);
    assert.match(error, /already/);
    assert.equal(((await replay.json()) as { error: string }).error, error);
  });

  it('refuses a forged proof, a payment for another price and a header that is not x402, each with a reason', async () => {
    const app = await sellerApp('fastify', '0.02', wallets.sellerSol);
    const reasonOf = async (headers: Record<string, string>) => {
      const response = await fetch(app.url, { headers });
      assert.equal(response.status, 402);
      return decodePaymentRequiredHeader(response.headers.get('payment-required') ?? '').error;
    };
    assert.match((await reasonOf({ 'x-payment': '0x01deadbeef' })) ?? '', /^INVALID_PAYMENT_PROOF: /);
    assert.match((await reasonOf({ 'payment-signature': 'not base64!' })) ?? '', /not base64 JSON/);

    // A proof of 0.01 SOL presented (as the spec's bare X-PAYMENT) for a 0.02 SOL resource.
    const cheap = await buyer.sendPayment({
      walletAddress: wallets.buyerSol,
      recipientAddress: wallets.sellerSol,
      amount: 0.01,
      resource: app.url,
    });
    assert.match(
      (await reasonOf({ 'x-payment': cheap.paymentProof })) ?? '',
      /^PAYMENT_VERIFICATION_FAILED: /,
    );
  });

  it('takes the bare gate402 proof in X-PAYMENT (spec §1) and answers X-PAYMENT-RESPONSE', async () => {
    const app = await sellerApp('hono', '0.01', wallets.sellerSol);
    const sent = await buyer.sendPayment({
      walletAddress: wallets.buyerSol,
      recipientAddress: wallets.sellerSol,
      amount: 0.01,
      resource: app.url,
    });
    const paid = await fetch(app.url, { headers: { 'x-payment': sent.paymentProof } });
    assert.equal(paid.status, 200);
    assert.equal(paid.headers.get('payment-response'), null);
    assert.equal(paymentResponseOf(paid)?.transaction, sent.signature);
  });

  it('takes a gate402 payment in v1 form (X-PAYMENT base64 JSON) and answers X-PAYMENT-RESPONSE', async () => {
    // The v1 body offers gate402's own scheme to nobody (x402 v1 clients refuse it), but a payment in
    // that form, as gate402 clients of before sent it, is still taken.
    const app = await sellerApp('fastify', '0.01', wallets.sellerSol);
    const sent = await buyer.sendPayment({
      walletAddress: wallets.buyerSol,
      recipientAddress: wallets.sellerSol,
      amount: 0.01,
      resource: app.url,
    });
    const { networks } = await seller.networks();
    const network = networks.find((n) => n.family === 'solana' && n.isDefault)?.id;
    const header = Buffer.from(
      JSON.stringify({
        x402Version: 1,
        scheme: GATE402_NATIVE_SCHEME,
        network,
        payload: { paymentProof: sent.paymentProof },
      }),
    ).toString('base64');
    const paid = await fetch(app.url, { headers: { 'x-payment': header } });
    assert.equal(paid.status, 200);
    assert.equal(paid.headers.get('payment-response'), null);
    assert.equal(paymentResponseOf(paid)?.payer, wallets.buyerSol);
    assert.equal(paymentResponseOf(paid)?.transaction, sent.signature);
  });

  it('pays native ETH on the EVM network', async () => {
    const app = await sellerApp('express', '0.01', wallets.sellerEth);
    const unpaid = await fetch(app.url);
    const offer = decodePaymentRequiredHeader(unpaid.headers.get('payment-required') ?? '').accepts[0];
    assert.deepEqual(
      [offer?.network, offer?.amount, offer?.extra],
      ['eip155:31337', '10000000000000000', { currency: 'ETH', decimals: 18 }],
    );
    const pay = payingFetch({ gateway: buyer, wallet: wallets.buyerEth, maxAmount: 0.01 });
    const paid = await pay(app.url);
    assert.equal(paid.status, 200);
    const settlement = paymentResponseOf(paid);
    assert.equal(settlement?.network, 'eip155:31337');
    assert.match(settlement?.transaction ?? '', /^0x[0-9a-f]{64}$/);
    const status = await seller.paymentHistory(wallets.sellerEth, { type: 'received' });
    assert.equal(status.payments[0]?.signature, settlement?.transaction);
  });

  it('declines a price above maxAmount before paying anything', async () => {
    const app = await sellerApp('express', '0.5', wallets.sellerSol);
    const before = (await buyer.paymentHistory(wallets.buyerSol)).total;
    const pay = payingFetch({ gateway: buyer, wallet: wallets.buyerSol, maxAmount: '0.1' });
    await assert.rejects(
      pay(app.url),
      (e: unknown) => e instanceof PaymentDeclinedError && /0\.5 SOL/.test(e.message),
    );
    assert.equal((await buyer.paymentHistory(wallets.buyerSol)).total, before);
    // A 402 without a gate402 option (a buyer with only an EVM wallet) is returned as it is.
    const evmOnly = payingFetch({ gateway: buyer, wallet: wallets.buyerEth, maxAmount: '1' });
    assert.equal((await evmOnly(app.url)).status, 402);
  });

  it('answers 502, not 402, when the gateway cannot check payments (a bad seller key)', async () => {
    const misconfigured = new Gate402Client({ url: gateway.url, apiKey: 'g402_sk_revoked' });
    const app = await startSellerApp('express', misconfigured, { price: '0.01', payTo: wallets.sellerSol });
    apps.push(app);
    const response = await fetch(app.url, { headers: { 'x-payment': '0x01' } });
    assert.equal(response.status, 502);
    assert.match(((await response.json()) as { error: string }).error, /UNAUTHORIZED/);
  });

  it('offers exact USDC beside native SOL; a stock @x402/fetch + @x402/svm buyer pays it through the facilitator, once', async () => {
    // The facilitator is a Premium feature; exact does not create the seller's token account, a first mint does.
    const premium = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    const payTo = (await premium.createWallet({ chain: 'solana' })).address;
    await premium.faucet({ address: payTo, amount: 0.01, token: 'USDC' });
    const { networks } = await premium.networks();
    const localnet = networks.find((n) => n.family === 'solana' && n.isDefault);
    const usdc = localnet?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    // Stock Solana clients know only mainnet, devnet and testnet: the localnet is reached as devnet.
    const devnet = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
    const app = await startSellerApp('express', premium, {
      price: '0.01',
      payTo,
      exact: { asset: usdc, amount: '0.01', network: devnet },
    });
    apps.push(app);

    const unpaid = await fetch(app.url);
    const [native, exact] = decodePaymentRequiredHeader(unpaid.headers.get('payment-required') ?? '').accepts;
    assert.equal(native?.scheme, GATE402_NATIVE_SCHEME);
    const { kinds } = await premium.facilitatorSupported();
    const feePayer = kinds.find((k) => k.network === devnet && k.x402Version === 2)?.extra?.feePayer;
    assert.ok(typeof feePayer === 'string');
    assert.deepEqual(exact, {
      scheme: 'exact',
      network: devnet,
      asset: usdc,
      amount: '10000',
      payTo,
      maxTimeoutSeconds: 60,
      extra: { feePayer },
    });
    // v1 clients are offered `exact` under the v1 name of devnet, which the localnet answers for.
    assert.deepEqual(
      ((await unpaid.json()) as { accepts: { scheme: string; network: string }[] }).accepts.map((a) => [
        a.scheme,
        a.network,
      ]),
      [['exact', 'solana-devnet']],
    );

    const signer = await generateKeyPairSigner();
    await buyer.faucet({ address: signer.address, amount: 1, token: 'USDC' });
    const stock = x402Client.fromConfig({
      schemes: [{ network: devnet, client: new ExactSvmScheme(signer, { rpcUrl: localnet?.rpcUrl ?? '' }) }],
      spendControls: { allowedAssets: [{ network: devnet, asset: usdc }] },
    });
    let proofHeader = '';
    // @x402/fetch hands over Requests that need not be this realm's Request: read their headers by shape.
    const recording: typeof fetch = async (input, init) => {
      const given =
        init?.headers ?? (typeof input === 'object' && 'headers' in input ? input.headers : undefined);
      proofHeader = new Headers(given).get('payment-signature') ?? proofHeader;
      return fetch(input, init);
    };
    const paid = await wrapFetchWithPayment(recording, stock)(app.url);
    assert.equal(paid.status, 200, await paid.clone().text());
    const body = (await paid.json()) as { payment: Record<string, unknown> };
    assert.deepEqual(
      [body.payment.scheme, body.payment.asset, body.payment.amount, body.payment.payer],
      ['exact', usdc, '0.01', signer.address],
    );
    const settled = paymentResponseOf(paid);
    assert.equal(settled?.success, true);
    assert.equal(settled?.transaction, body.payment.transaction);
    const received = await premium.paymentHistory(payTo, { type: 'received' });
    assert.deepEqual(
      received.payments.map((p) => [p.sender, p.signature]),
      [[signer.address, settled?.transaction]],
    );

    const replay = await fetch(app.url, { headers: { 'payment-signature': proofHeader } });
    assert.equal(replay.status, 402);
    const reason = decodePaymentRequiredHeader(replay.headers.get('payment-required') ?? '').error ?? '';
    assert.match(reason, /^duplicate_settlement/);
    assert.equal((await premium.paymentHistory(payTo, { type: 'received' })).total, 1);
  });

  it('offers exact USDC on EVM (EIP-3009); a stock @x402/fetch + @x402/evm buyer pays it', async () => {
    const premium = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    const payTo = (await premium.createWallet({ chain: 'evm' })).address;
    const { networks } = await premium.networks();
    const usdc = networks
      .find((n) => n.id === 'eip155:31337')
      ?.tokens.find((t) => t.symbol === 'USDC')?.address;
    assert.ok(usdc);
    const app = await startSellerApp('hono', premium, {
      price: '0.01',
      payTo,
      exact: { asset: usdc, amount: '0.02', extra: { name: 'USD Coin', version: '2' } },
    });
    apps.push(app);
    const offer = decodePaymentRequiredHeader((await fetch(app.url)).headers.get('payment-required') ?? '');
    assert.deepEqual(offer.accepts[1], {
      scheme: 'exact',
      network: 'eip155:31337',
      asset: usdc,
      amount: '20000',
      payTo,
      maxTimeoutSeconds: 60,
      extra: { name: 'USD Coin', version: '2' },
    });

    const account = privateKeyToAccount(generatePrivateKey());
    await buyer.faucet({ address: account.address, amount: 1, token: 'USDC' });
    const stock = x402Client.fromConfig({
      schemes: [{ network: 'eip155:31337', client: new ExactEvmScheme(account) }],
      spendControls: { allowedAssets: [{ network: 'eip155:31337', asset: usdc }] },
    });
    const paid = await wrapFetchWithPayment(fetch, stock)(app.url);
    assert.equal(paid.status, 200, await paid.clone().text());
    const body = (await paid.json()) as { payment: Record<string, unknown> };
    assert.deepEqual(
      [body.payment.scheme, body.payment.amount, body.payment.payer],
      ['exact', '0.02', account.address],
    );
    assert.match(paymentResponseOf(paid)?.transaction ?? '', /^0x[0-9a-f]{64}$/);
  });

  it("answers 500 naming the seller's exact option when the gateway rules it out, not 502", async () => {
    const premium = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    const payTo = (await premium.createWallet({ chain: 'evm' })).address;
    const { networks } = await premium.networks();
    const usdc =
      networks.find((n) => n.id === 'eip155:31337')?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    const answerOf = async (exact: { asset: string; amount: string; network?: string }) => {
      const app = await startSellerApp('express', premium, { price: '0.01', payTo, exact });
      apps.push(app);
      const response = await fetch(app.url);
      return [response.status, ((await response.json()) as { error: string }).error];
    };
    assert.deepEqual(await answerOf({ asset: usdc, amount: '0.0000001' }), [
      500,
      `the paywall's exact option: amount 0.0000001: ${usdc} has 6 decimals`,
    ]);
    assert.deepEqual(await answerOf({ asset: usdc, amount: '0.01', network: 'eip155:999' }), [
      500,
      "the paywall's exact option: the gateway's facilitator does not settle exact payments on eip155:999",
    ]);
  });

  it("hono: a handler answering fetch's or Response.redirect's Response (immutable headers) is served with PAYMENT-RESPONSE, not a 500", async () => {
    const upstream = createServer((_req, res) => res.end('from upstream'));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/`;
    const { protect } = honoPaywall(seller);
    const app = new Hono();
    const paywall = protect({ price: '0.01', payTo: wallets.sellerSol });
    app.get('/proxy', paywall, () => fetch(upstreamUrl));
    app.get('/moved', paywall, () => Response.redirect(upstreamUrl, 302));
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const pay = payingFetch({ gateway: buyer, wallet: wallets.buyerSol, maxAmount: '0.01' });
      const proxied = await pay(`${base}/proxy`);
      assert.equal(proxied.status, 200);
      assert.equal(await proxied.text(), 'from upstream');
      assert.equal(paymentResponseOf(proxied)?.payer, wallets.buyerSol);
      const moved = await pay(`${base}/moved`, { redirect: 'manual' });
      assert.equal(moved.status, 302);
      assert.equal(moved.headers.get('location'), upstreamUrl);
      assert.equal(paymentResponseOf(moved)?.payer, wallets.buyerSol);
    } finally {
      server.close();
      upstream.close();
    }
  });

  it('refuses a price the gateway could not send at start-up', () => {
    const { protect } = expressPaywall(seller);
    assert.throws(
      () => protect({ price: '0.0001', payTo: wallets.sellerSol }),
      /price must be from 0.001 to 100/,
    );
    assert.throws(() => protect({ price: '-1', payTo: wallets.sellerSol }), /not a non-negative decimal/);
    assert.throws(() => protect({ price: '0.01', payTo: ' ' }), /payTo/);
  });
});
