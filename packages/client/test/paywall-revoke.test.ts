import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import { createPublicClient, createWalletClient, type Hex, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { expressPaywall } from '../src/express.ts';
import {
  Gate402Client,
  type Gate402Payment,
  type PaymentEvent,
  verifyPaymentWebhook,
  WebhookVerificationError,
} from '../src/index.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';

const ANVIL = 'eip155:31337';
const ERC20 = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function transfer(address to, uint256 amount) returns (bool)',
]);

/**
 * A seller grants access per payment and takes it back when the payment leaves the chain: the
 * paywall names the gateway's payment (`paymentId`), the seller's webhook endpoint checks each delivery
 * with verifyPaymentWebhook, and a `payment.reverted` revokes what that payment granted. On the real
 * gateway (anvil): an `exact` USDC payment settled by its facilitator, whose block is rolled back while
 * the buyer moves the USDC elsewhere, so the settlement's bytes fail when resent.
 */
describe('gate402 paywall: a seller revokes what a reverted payment granted', () => {
  let gateway: InProcessGateway;
  let seller: Gate402Client;
  let close: () => Promise<void>;
  let shop: string;
  let secret = '';
  /** What the seller granted, by the gateway's payment id. */
  const granted = new Map<string, string>();
  const delivered: PaymentEvent[] = [];
  const refused: string[] = [];

  before(async () => {
    gateway = await startGateway({ ALLOW_PRIVATE_OUTBOUND_URLS: 'true', WEBHOOK_RETRY_BASE_MS: '50' });
    seller = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    const payTo = (await seller.createWallet({ chain: 'evm' })).address;
    const usdc = await usdcAddress();

    // The seller's app: a paid report, and the endpoint its gateway's webhooks are delivered to.
    const app = express();
    const { protect } = expressPaywall(seller);
    app.get(
      '/report',
      protect({
        price: '0.01',
        payTo,
        exact: { asset: usdc, amount: '0.02', extra: { name: 'USD Coin', version: '2' } },
      }),
      (_req, res) => {
        const payment = res.locals.payment as Gate402Payment;
        assert.ok(payment.paymentId, 'the paywall names the payment');
        granted.set(payment.paymentId, 'report access');
        res.json({ report: 'the numbers', paymentId: payment.paymentId });
      },
    );
    app.post('/gate402-events', express.text({ type: '*/*' }), (req, res) => {
      let event: PaymentEvent;
      try {
        event = verifyPaymentWebhook(secret, req.headers, req.body as string);
      } catch (error) {
        assert.ok(error instanceof WebhookVerificationError);
        refused.push(error.message);
        res.sendStatus(400);
        return;
      }
      delivered.push(event);
      if (event.type === 'payment.reverted') granted.delete(event.data.paymentId);
      res.sendStatus(204);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    shop = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => new Promise((resolve) => server.close(() => resolve()));
    const hook = await seller.createWebhook({
      url: `${shop}/gate402-events`,
      eventTypes: ['payment.reverted'],
    });
    secret = hook.secret;
  });
  after(async () => {
    await close?.();
    await gateway?.close();
  });

  async function anvilUrl(): Promise<string> {
    const anvil = (await seller.networks()).networks.find((n) => n.id === ANVIL);
    assert.ok(anvil?.rpcUrl);
    return anvil.rpcUrl;
  }
  async function usdcAddress(): Promise<Hex> {
    const anvil = (await seller.networks()).networks.find((n) => n.id === ANVIL);
    const usdc = anvil?.tokens.find((t) => t.symbol === 'USDC')?.address;
    assert.ok(usdc);
    return usdc as Hex;
  }
  async function until(what: string, condition: () => Promise<boolean>, ms = 30_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it('grants on the payment, and revokes on its verified payment.reverted webhook; a forged delivery is refused', async () => {
    const rpcUrl = await anvilUrl();
    const usdc = await usdcAddress();
    const chain = createPublicClient({ transport: http(rpcUrl) });
    const account = privateKeyToAccount(generatePrivateKey());
    await seller.faucet({ address: account.address, amount: 1 });
    await seller.faucet({ address: account.address, amount: 0.02, token: 'USDC' });
    const stock = x402Client.fromConfig({
      schemes: [{ network: ANVIL, client: new ExactEvmScheme(account) }],
      spendControls: { allowedAssets: [{ network: ANVIL, asset: usdc }] },
    });

    const paid = await wrapFetchWithPayment(fetch, stock)(`${shop}/report`);
    assert.equal(paid.status, 200, await paid.clone().text());
    const { paymentId } = (await paid.json()) as { paymentId: string };
    assert.equal(granted.get(paymentId), 'report access');
    const status = await seller.paymentStatus(paymentId);
    assert.equal(status.status, 'confirmed');
    assert.equal(status.amount, 0.02);

    // A forged delivery (signed with another secret) revokes nothing.
    const forged = await fetch(`${shop}/gate402-events`, {
      method: 'POST',
      headers: {
        'webhook-id': 'evt_forged',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': `v1,${Buffer.alloc(32, 7).toString('base64')}`,
      },
      body: JSON.stringify({ id: 'evt_forged', type: 'payment.reverted', data: { paymentId } }),
    });
    assert.equal(forged.status, 400);
    assert.equal(granted.get(paymentId), 'report access');

    // The settlement's block leaves the chain; before the gateway looks again, the buyer moves its USDC.
    const reconciler = gateway.server.gateway.jobs.find((job) => job.name === 'payment-reconciler');
    assert.ok(reconciler);
    await reconciler.stop();
    // From the settlement's block on (anvil may have made other blocks since).
    const settled = await chain.getTransactionReceipt({ hash: status.signature as Hex });
    const depth = Number((await chain.getBlockNumber()) - settled.blockNumber) + 1;
    await chain.request({ method: 'anvil_rollback', params: [depth] } as never);
    const buyer = createWalletClient({ account, transport: http(rpcUrl) });
    const away = await buyer.writeContract({
      address: usdc,
      abi: ERC20,
      functionName: 'transfer',
      args: [privateKeyToAccount(generatePrivateKey()).address, 20_000n],
      chain: null,
    });
    await chain.waitForTransactionReceipt({ hash: away });
    assert.equal(
      await chain.readContract({
        address: usdc,
        abi: ERC20,
        functionName: 'balanceOf',
        args: [account.address],
      }),
      0n,
    );
    reconciler.start();

    // The resent settlement fails for want of funds: reverted, delivered, verified, revoked.
    await until('the grant revoked', async () => !granted.has(paymentId));
    const reverted = delivered.find((e) => e.data.paymentId === paymentId);
    assert.equal(reverted?.type, 'payment.reverted');
    assert.equal(reverted?.data.status, 'reverted');
    assert.equal((await seller.paymentStatus(paymentId)).status, 'reverted');
    assert.deepEqual(refused, ['no webhook-signature matches this body and secret']);
  });
});
