import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ExactEvmScheme as EvmSellerScheme } from '@x402/evm/exact/server';
import { x402ResourceServer as HonoResourceServer, paymentMiddleware } from '@x402/hono';
import { ExactSvmScheme as SvmSellerScheme } from '@x402/svm/exact/server';
import { Hono } from 'hono';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { agentClient, callTool, toolError } from '../../support/mcp-agent.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { gatewayFacilitator } from '../../support/x402-shop.ts';

/**
 * An agent pays a stock x402 seller through MCP: a stock `@x402/hono` seller asking 0.01 USDC on the
 * embedded Solana chain and 0.02 USDC on the embedded anvil (gate402 its facilitator), and an agent whose only credential is a gate402 API key
 * calling fetch_paid_url on /mcp with the MCP SDK's client. The custodial wallet signs the `exact` payment
 * (POST /payment/x402 under payingFetch), and the seller serves once it settled.
 */
describe('MCP fetch_paid_url pays a stock @x402/hono seller on both embedded chains', () => {
  let chain: TestChain;
  let evm: TestEvm;
  let gw: TestGateway;
  let base: string;
  let sellerUrl: string;
  let closeSeller: () => Promise<void>;
  const buyer = { key: '', accountId: '', wallet: '', evmWallet: '' };
  let sellerWallet: string;
  let sellerEvmWallet: string;

  before(async () => {
    [chain, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    gw = await startTestGateway({
      networks: new NetworkRegistry([chain.adapter, evm.adapter]),
      // The seller listens on 127.0.0.1.
      allowPrivateOutboundUrls: true,
    });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;

    const seller = await gw.newCaller('premium');
    sellerWallet = (await callAs(gw, seller.key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    sellerEvmWallet = (await callAs(gw, seller.key, 'POST', '/wallets', { chain: 'evm' })).body.address;
    // x402 `exact` does not create the seller's token account: a first USDC mint does.
    await callAs(gw, seller.key, 'POST', '/faucet', { address: sellerWallet, amount: 0.01, token: 'USDC' });
    Object.assign(buyer, await gw.newCaller('standard'));
    buyer.wallet = (await callAs(gw, buyer.key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    buyer.evmWallet = (await callAs(gw, buyer.key, 'POST', '/wallets', { chain: 'evm' })).body.address;
    for (const address of [buyer.wallet, buyer.evmWallet]) {
      const funded = await callAs(gw, buyer.key, 'POST', '/faucet', { address, amount: 1, token: 'USDC' });
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }
    const evmNetwork = evm.adapter.info.id as `eip155:${string}`;

    const resourceServer = new HonoResourceServer(gatewayFacilitator(base, seller.key));
    resourceServer.register(SOLANA_DEVNET_ID, new SvmSellerScheme());
    resourceServer.register(evmNetwork, new EvmSellerScheme());
    const app = new Hono();
    app.use(
      paymentMiddleware(
        {
          'GET /report': {
            accepts: {
              scheme: 'exact',
              network: SOLANA_DEVNET_ID,
              payTo: sellerWallet,
              price: { amount: '10000', asset: chain.localnet.usdcMint.address },
            },
            description: 'a report paid in localnet USDC',
          },
          'GET /evm-report': {
            accepts: {
              scheme: 'exact',
              network: evmNetwork,
              payTo: sellerEvmWallet,
              price: { amount: '20000', asset: evm.usdc.address, extra: { name: 'USD Coin', version: '2' } },
            },
          },
        },
        resourceServer,
      ),
    );
    app.get('/report', (c) => c.json({ report: 'paid in USDC' }));
    app.get('/evm-report', (c) => c.json({ report: 'paid in anvil USDC' }));
    await new Promise<void>((resolve) => {
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
        sellerUrl = `http://127.0.0.1:${info.port}/report`;
        resolve();
      });
      closeSeller = () => new Promise((done) => server.close(() => done()));
    });
  });
  after(async () => {
    await closeSeller?.();
    await gw?.close();
    await Promise.all([chain?.close(), evm?.close()]);
    evm?.dispose();
  });

  it('Solana: lists the tools, declines a price above maxAmount, then pays 0.01 USDC and gets the report', async () => {
    const client = agentClient();
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${buyer.key}` } },
      }),
    );
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'fetch_paid_url'));

      // A native limit pays gate402 offers only: the 402 comes back unpaid, with what it asks.
      const unpaid = await callTool(client, 'fetch_paid_url', {
        url: sellerUrl,
        wallet: buyer.wallet,
        maxAmount: '0.05',
      });
      assert.equal(unpaid.isError, false, JSON.stringify(unpaid.value));
      assert.equal(unpaid.value.status, 402);
      assert.equal(unpaid.value.payment, null);
      assert.deepEqual(unpaid.value.offers, [
        {
          scheme: 'exact',
          network: SOLANA_DEVNET_ID,
          asset: chain.localnet.usdcMint.address,
          amount: '10000',
          payTo: sellerWallet,
        },
      ]);

      const declined = toolError(
        await callTool(client, 'fetch_paid_url', {
          url: sellerUrl,
          wallet: buyer.wallet,
          maxAmount: { USDC: '0.005' },
        }),
      );
      assert.equal(declined.code, 'PAYMENT_DECLINED', declined.message);

      // The account's spend policy refuses it: the agent is told the policy's own code and what remains.
      const at = Date.now();
      await gw.store.spending.putPolicy({
        accountId: buyer.accountId,
        keyId: null,
        limits: [
          {
            network: chain.adapter.info.id,
            asset: chain.localnet.usdcMint.address,
            symbol: 'USDC',
            decimals: 6,
            maxPerPayment: 5_000n,
            maxPerDay: null,
          },
        ],
        allowedRecipients: null,
        allowedHosts: null,
        allowedNetworks: null,
        expiresAt: null,
        createdAt: at,
        updatedAt: at,
      });
      const capped = toolError(
        await callTool(client, 'fetch_paid_url', {
          url: sellerUrl,
          wallet: buyer.wallet,
          maxAmount: { USDC: '0.05' },
        }),
      );
      assert.equal(capped.code, 'SPEND_LIMIT_EXCEEDED', capped.message);
      assert.equal(capped.details?.limit, 'maxPerPayment');
      await gw.store.spending.deletePolicy(buyer.accountId, null);
      const sent = async () =>
        (await callAs(gw, buyer.key, 'GET', `/payment/history/${buyer.wallet}?type=sent`)).body.total;
      assert.equal(await sent(), 0, 'nothing paid');

      const fetched = await callTool(client, 'fetch_paid_url', {
        url: sellerUrl,
        wallet: buyer.wallet,
        maxAmount: { USDC: '0.05' },
      });
      assert.equal(fetched.isError, false, JSON.stringify(fetched.value));
      assert.equal(fetched.value.status, 200, String(fetched.value.body));
      assert.deepEqual(JSON.parse(String(fetched.value.body)), { report: 'paid in USDC' });
      const settlement = fetched.value.settlement as { success: boolean; payer: string; transaction: string };
      assert.equal(settlement.success, true);
      assert.equal(settlement.payer, buyer.wallet);
      const payment = fetched.value.payment as { paymentId: string; amount: number; recipient: string };
      assert.match(payment.paymentId, /^pay_/);
      assert.equal(payment.amount, 0.01);
      assert.equal(payment.recipient, sellerWallet);

      const one = await callTool(client, 'get_payment', { paymentId: payment.paymentId });
      assert.equal(one.value.sender, buyer.wallet);
      assert.equal(one.value.recipient, sellerWallet);
      assert.equal((one.value.asset as { symbol: string }).symbol, 'USDC');
      assert.equal(await sent(), 1, 'paid once');
    } finally {
      await client.close();
    }
  });

  it('EVM: pays the same seller 0.02 USDC on the embedded anvil (EIP-3009, signed by the gateway)', async () => {
    const client = agentClient();
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${buyer.key}` } },
      }),
    );
    try {
      const url = sellerUrl.replace(/\/report$/, '/evm-report');
      const fetched = await callTool(client, 'fetch_paid_url', {
        url,
        wallet: buyer.evmWallet,
        maxAmount: { USDC: '0.05' },
      });
      assert.equal(fetched.isError, false, JSON.stringify(fetched.value));
      assert.equal(fetched.value.status, 200, String(fetched.value.body));
      assert.deepEqual(JSON.parse(String(fetched.value.body)), { report: 'paid in anvil USDC' });
      const settlement = fetched.value.settlement as { success: boolean; payer: string };
      assert.equal(settlement.success, true);
      assert.equal(settlement.payer.toLowerCase(), buyer.evmWallet.toLowerCase());
      const payment = fetched.value.payment as { amount: number; asset: string; recipient: string };
      assert.equal(payment.amount, 0.02);
      assert.equal(payment.asset, 'USDC');
      assert.equal(payment.recipient.toLowerCase(), sellerEvmWallet.toLowerCase());
    } finally {
      await client.close();
    }
  });
});
