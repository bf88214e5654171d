import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { declareDiscoveryExtension, withBazaar } from '@x402/extensions/bazaar';
import { wrapFetchWithPayment } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { Gate402Client } from '../src/gate402-client.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';
import { type SellerApp, startSellerApp } from './support/seller-apps.ts';

/** Stock Solana clients know only mainnet, devnet and testnet: the localnet is reached as devnet. */
const DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';

/**
 * protect() declaring x402 `bazaar` discovery info (the stock declareDiscoveryExtension) in its 402: a
 * stock @x402/fetch buyer echoes it with its `exact` payment, and once the gateway's facilitator settled
 * it the resource is in GET /facilitator/discovery/resources, as the stock withBazaar client reads it.
 */
describe('gate402 paywall: bazaar discovery info', () => {
  let gateway: InProcessGateway;
  let seller: Gate402Client;
  let sellerKey: string;
  let app: SellerApp | undefined;

  before(async () => {
    gateway = await startGateway();
    sellerKey = await gateway.newApiKey('premium');
    seller = new Gate402Client({ url: gateway.url, apiKey: sellerKey });
  });
  after(async () => {
    await app?.close();
    await gateway?.close();
  });

  it('declares the extension in the 402 and is catalogued once an exact payment settles', async () => {
    const { networks } = await seller.networks();
    const localnet = networks.find((n) => n.family === 'solana' && n.isDefault);
    const usdc = localnet?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    const payTo = (await seller.createWallet({ chain: 'solana' })).address;
    await seller.faucet({ address: payTo, amount: 0.01 });
    app = await startSellerApp('express', seller, {
      price: '0.01',
      payTo,
      description: 'Sunny or not',
      exact: { asset: usdc, amount: '0.01', network: DEVNET },
      // No method: protect() states GET, as a stock seller's resource server states the route's.
      extensions: declareDiscoveryExtension({
        input: { city: 'Porto' },
        output: { example: { forecast: 'sunny' } },
      }),
    });
    const offer = decodePaymentRequiredHeader((await fetch(app.url)).headers.get('payment-required') ?? '');
    assert.ok(offer.extensions?.bazaar, 'the 402 declares bazaar');

    const buyer = await generateKeyPairSigner();
    await seller.faucet({ address: buyer.address, amount: 1, token: 'USDC' });
    const stock = x402Client.fromConfig({
      schemes: [{ network: DEVNET, client: new ExactSvmScheme(buyer, { rpcUrl: localnet?.rpcUrl ?? '' }) }],
      spendControls: { allowedAssets: [{ network: DEVNET, asset: usdc }] },
    });
    const paid = await wrapFetchWithPayment(fetch, stock)(app.url);
    assert.equal(paid.status, 200, await paid.clone().text());

    const headers = { Authorization: `Bearer ${sellerKey}` };
    const bazaar = withBazaar(
      new HTTPFacilitatorClient({
        url: `${gateway.url}/facilitator`,
        createAuthHeaders: async () => ({
          verify: headers,
          settle: headers,
          supported: headers,
          bazaar: headers,
        }),
      }),
    ).extensions.bazaar;
    const { items } = await bazaar.listResources();
    assert.equal(items.length, 1, JSON.stringify(items));
    assert.equal(items[0]?.resource, app.url);
    assert.equal(items[0]?.description, 'Sunny or not');
    assert.equal(items[0]?.accepts[0]?.scheme, 'exact');
    assert.equal(items[0]?.accepts[0]?.payTo, payTo);
    const declared = items[0]?.extensions?.bazaar as { info: { input: Record<string, unknown> } } | undefined;
    assert.deepEqual(declared?.info.input, { type: 'http', method: 'GET', queryParams: { city: 'Porto' } });
  });
});
