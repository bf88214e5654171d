import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Gate402Client, payingFetch } from '@gate402/client';
import { generateKeyPairSigner } from '@solana/kit';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { injectFetch } from '../../../src/http/routes/mcp.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

/**
 * Review of #28 (spend policies x payingFetch, as /mcp's fetch_paid_url runs it on the gateway): a
 * policy's `allowedHosts` is the one limit that binds the seller an agent may be talked into paying. But
 * payingFetch pays a gate402-native offer with `resource` = the URL the 402 itself names, never checked
 * against the URL it fetched: a seller at any host names an allowed host in its challenge, and the
 * gateway, seeing an allowed resource, pays the seller's payTo. The x402 `exact` path is not fooled
 * (POST /payment/x402 compares the challenge's resource host with the URL fetched).
 */
describe('review #28: a 402 naming an allowed host it is not on', { timeout: 120_000 }, () => {
  let chain: TestChain;
  let gw: TestGateway;
  let seller: Server;
  let sellerUrl: string;
  let buyer: { key: string; wallet: string };
  let attacker: string;

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]) });
    const caller = await gw.newCaller('standard');
    const wallet = (await callAs(gw, caller.key, 'POST', '/wallets', { chain: 'solana' })).body
      .address as string;
    buyer = { key: caller.key, wallet };
    assert.equal(
      (await callAs(gw, buyer.key, 'POST', '/faucet', { address: wallet, amount: 1 })).status,
      200,
    );
    const at = Date.now();
    await gw.store.spending.putPolicy({
      accountId: caller.accountId,
      keyId: null,
      limits: null,
      allowedRecipients: null,
      allowedHosts: ['api.allowed.com'],
      allowedNetworks: null,
      expiresAt: null,
      createdAt: at,
      updatedAt: at,
    });
    attacker = (await generateKeyPairSigner()).address;
    const challenge = {
      x402Version: 2,
      resource: { url: 'https://api.allowed.com/report' },
      accepts: [
        {
          scheme: 'gate402-native',
          network: chain.adapter.info.id,
          asset: 'native',
          amount: '5000000',
          payTo: attacker,
          maxTimeoutSeconds: 60,
          extra: { currency: 'SOL', decimals: 9 },
        },
      ],
    };
    seller = createServer((req, res) => {
      if (req.headers['payment-signature'] !== undefined) {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('paid');
        return;
      }
      res
        .writeHead(402, {
          'content-type': 'application/json',
          'payment-required': Buffer.from(JSON.stringify(challenge)).toString('base64'),
        })
        .end('{}');
    });
    await new Promise<void>((resolve) => seller.listen(0, '127.0.0.1', resolve));
    sellerUrl = `http://127.0.0.1:${(seller.address() as AddressInfo).port}/report`;
  });
  after(async () => {
    await new Promise((resolve) => seller?.close(resolve));
    await gw?.close();
    await chain?.close();
  });

  it("pays nothing to a seller whose 402 names another host's resource", async () => {
    const gateway = new Gate402Client({
      url: 'http://gate402.internal',
      apiKey: buyer.key,
      fetch: injectFetch(gw.app),
    });
    const pay = payingFetch({ gateway, wallet: buyer.wallet, maxAmount: '0.01' });
    await pay(sellerUrl).catch(() => undefined);
    const sent = await callAs(gw, buyer.key, 'GET', `/payment/history/${buyer.wallet}?type=sent`);
    assert.equal(sent.body.total, 0, JSON.stringify(sent.body.payments?.[0]));
    assert.equal(await chain.adapter.getBalance(attacker), 0n);
  });
});
