import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { x402Client } from '@x402/core/client';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import { createPublicClient, type Hex, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { expressPaywall } from '../src/express.ts';
import { Gate402Client, type Gate402Payment } from '../src/index.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';

const ANVIL = 'eip155:31337';
const ERC20 = parseAbi(['function balanceOf(address) view returns (uint256)']);

/**
 * A refund end to end with a stock x402 buyer (#30): `@x402/fetch` pays a gate402 `protect()` seller
 * whose payTo is one of its custodial wallets, in USDC on the gateway's anvil; the seller refunds the
 * payment the paywall named with POST /payment/refund/{id} (the SDK's refundPayment); the buyer holds
 * exactly what it held before it paid. The payment is only confirmed when refunded, so the refund is
 * held until the chain finalizes it (docs/refunds.md), then sent by the gateway's own reconciler.
 */
describe('gate402 paywall: a stock x402 buyer is refunded exactly', () => {
  let gateway: InProcessGateway;
  let seller: Gate402Client;
  let close: () => Promise<void>;
  let shop: string;
  let payTo: string;

  before(async () => {
    gateway = await startGateway();
    seller = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    payTo = (await seller.createWallet({ chain: 'evm' })).address;
    // The refund's gas is the seller's.
    await seller.faucet({ address: payTo, amount: 1 });
    const usdc = await usdcAddress();
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
        res.json({ report: 'the numbers', paymentId: payment.paymentId });
      },
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    shop = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  });
  after(async () => {
    await close?.();
    await gateway?.close();
  });

  async function anvil() {
    const network = (await seller.networks()).networks.find((n) => n.id === ANVIL);
    assert.ok(network?.rpcUrl);
    return network;
  }
  async function usdcAddress(): Promise<Hex> {
    const usdc = (await anvil()).tokens.find((t) => t.symbol === 'USDC')?.address;
    assert.ok(usdc);
    return usdc as Hex;
  }
  async function until(what: string, condition: () => Promise<boolean>, ms = 60_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('pays with @x402/fetch, is refunded through POST /payment/refund/{id}, and holds exactly what it held before', async () => {
    const rpcUrl = (await anvil()).rpcUrl as string;
    const usdc = await usdcAddress();
    const chain = createPublicClient({ transport: http(rpcUrl) });
    const usdcOf = (address: Hex) =>
      chain.readContract({ address: usdc, abi: ERC20, functionName: 'balanceOf', args: [address] });
    const account = privateKeyToAccount(generatePrivateKey());
    await seller.faucet({ address: account.address, amount: 1 });
    await seller.faucet({ address: account.address, amount: 0.05, token: 'USDC' });
    const usdcBefore = await usdcOf(account.address);
    const nativeBefore = await chain.getBalance({ address: account.address });
    assert.equal(usdcBefore, 50_000n);

    const stock = x402Client.fromConfig({
      schemes: [{ network: ANVIL, client: new ExactEvmScheme(account) }],
      spendControls: { allowedAssets: [{ network: ANVIL, asset: usdc }] },
    });
    const paid = await wrapFetchWithPayment(fetch, stock)(`${shop}/report`);
    assert.equal(paid.status, 200, await paid.clone().text());
    const { paymentId } = (await paid.json()) as { paymentId: string };
    assert.equal(await usdcOf(account.address), 30_000n, 'the buyer paid 0.02 USDC');

    const refund = await seller.refundPayment(
      paymentId,
      { reason: 'the report was wrong' },
      { idempotencyKey: `refund-${paymentId}` },
    );
    assert.equal(refund.mode, 'custodial');
    assert.equal(refund.refundOf, paymentId);
    assert.equal(refund.recipient.toLowerCase(), account.address.toLowerCase(), 'to the buyer that signed');
    assert.equal(refund.amount, 0.02);
    if ((await seller.paymentStatus(paymentId)).status === 'confirmed') {
      // Not final yet: held, nothing sent until the chain finalizes the payment.
      assert.equal(refund.status, 'pending');
      assert.equal(refund.heldUntil, 'refunded_payment_finalized');
      assert.equal(await usdcOf(account.address), 30_000n);
    }
    // anvil (no block time) calls a block final 64 deep; the gateway's reconciler does the rest.
    await chain.request({ method: 'anvil_mine', params: ['0x46', '0x0'] } as never);
    await until('the refund confirmed', async () => {
      const status = (await seller.paymentStatus(refund.paymentId)).status;
      return status === 'confirmed' || status === 'finalized';
    });
    assert.equal(await usdcOf(account.address), usdcBefore, 'exactly what it held before it paid');
    assert.equal(await chain.getBalance({ address: account.address }), nativeBefore, 'the buyer paid no gas');
    const original = await seller.paymentStatus(paymentId);
    assert.equal(original.refunds?.refunded, 0.02);
    assert.equal(original.refunds?.refundable, 0);
    // The same key answers the same refund: the money moved once.
    const again = await seller.refundPayment(
      paymentId,
      { reason: 'the report was wrong' },
      { idempotencyKey: `refund-${paymentId}` },
    );
    assert.equal(again.paymentId, refund.paymentId);
    assert.equal(await usdcOf(account.address), usdcBefore);
  });
});
