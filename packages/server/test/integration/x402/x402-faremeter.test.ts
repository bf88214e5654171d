import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { wrap } from '@faremeter/fetch';
import { createHTTPFacilitatorHandler, express as faremeterExpress } from '@faremeter/middleware';
import { exact } from '@faremeter/payment-solana';
import { x402PaymentRequiredResponse } from '@faremeter/types/x402v2';
import { address, createSolanaRpc, generateKeyPairSigner, partiallySignTransaction } from '@solana/kit';
import express from 'express';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * faremeter against gate402's facilitator on the embedded localnet (under its own CAIP-2 id, which
 * faremeter takes): a stock `@faremeter/middleware` express seller whose x402 handler is faremeter's
 * HTTP facilitator handler pointed at gate402 (it asks POST /facilitator/accepts for the 402, then
 * /verify and /settle, with no top-level x402Version), and a stock `@faremeter/fetch` buyer paying
 * with `@faremeter/payment-solana`'s exact handler.
 */
describe('x402 facilitator with stock faremeter seller and buyer', () => {
  let chain: TestChain;
  let gw: TestGateway;
  let gatewayUrl: string;
  let key: string;
  let payTo: string;
  let feePayer: string;
  let server: ReturnType<ReturnType<typeof express>['listen']> | undefined;

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    gatewayUrl = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    key = (await gw.newCaller('premium')).key;
    payTo = (await callAs(gw, key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    await callAs(gw, key, 'POST', '/faucet', { address: payTo, amount: 0.01, token: 'USDC' });
    feePayer = (await callAs(gw, key, 'GET', '/facilitator/supported')).body.kinds[0].extra.feePayer;
  });

  after(async () => {
    await new Promise((resolve) => (server === undefined ? resolve(undefined) : server.close(resolve)));
    await gw?.close();
    await chain?.close();
  });

  /** faremeter's handler sends no credentials: the seller gives it a fetch that adds its key. */
  const withKey: typeof fetch = (input, init) =>
    fetch(input, {
      ...init,
      headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${key}` },
    });

  it('POST /facilitator/accepts answers what faremeter validates: the requirements it settles, with the fee payer, decimals and token program', async () => {
    const mint = chain.localnet.usdcMint.address;
    const network = chain.adapter.info.id;
    const requirement = {
      scheme: 'exact',
      network,
      amount: '10000',
      asset: mint,
      payTo,
      maxTimeoutSeconds: 60,
    };
    const res = await withKey(`${gatewayUrl}/facilitator/accepts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        x402Version: 2,
        resource: { url: 'https://shop.example/r' },
        accepts: [
          requirement,
          { ...requirement, scheme: 'upto' },
          { ...requirement, asset: payTo },
          { ...requirement, network: 'eip155:1' },
        ],
      }),
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as Record<string, unknown>;
    assert.equal('summary' in (x402PaymentRequiredResponse(body) as object), false, JSON.stringify(body));
    assert.deepEqual(body.accepts, [
      {
        ...requirement,
        extra: { feePayer, decimals: 6, tokenProgram: 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA' },
      },
    ]);
    // Without a key, as faremeter's handler asks by default: refused, not served to anyone.
    const anonymous = await fetch(`${gatewayUrl}/facilitator/accepts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ x402Version: 2, accepts: [requirement] }),
    });
    assert.equal(anonymous.status, 401);
  });

  it('a @faremeter/fetch buyer pays the @faremeter/middleware seller through gate402, once, recorded as the seller’s payment', async () => {
    const mint = chain.localnet.usdcMint.address;
    const network = chain.adapter.info.id;
    const handler = createHTTPFacilitatorHandler(`${gatewayUrl}/facilitator`, {
      fetch: withKey,
      capabilities: { networks: [network], assets: [mint] },
      schemes: ['exact'],
    });
    const app = express();
    const paywall = await faremeterExpress.createMiddleware({
      x402Handlers: [handler],
      pricing: [{ amount: '10000', asset: mint, recipient: payTo, network }],
    });
    app.get('/report', paywall, (_req, res) => void res.json({ report: 'faremeter' }));
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server?.once('listening', resolve));
    const shopUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/report`;

    const buyer = await generateKeyPairSigner();
    await callAs(gw, key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const wallet = {
      network,
      publicKey: buyer.address,
      partiallySignTransaction: (tx: Parameters<typeof partiallySignTransaction>[1]) =>
        partiallySignTransaction([buyer.keyPair], tx),
    };
    const pay = wrap(fetch, {
      handlers: [
        exact.createPaymentHandler(
          wallet as never,
          address(mint),
          createSolanaRpc(chain.localnet.rpcUrl) as never,
        ),
      ],
    });
    const res = await pay(shopUrl);
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { report: 'faremeter' });
    const history = await callAs(gw, key, 'GET', `/payment/history/${payTo}`);
    const paid = history.body.payments.filter((p: { sender: string }) => p.sender === buyer.address);
    assert.equal(paid.length, 1);
    assert.equal(paid[0].amount, 0.01);
  });
});
