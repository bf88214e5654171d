import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { createPermit2ApprovalTx } from '@x402/evm';
import { UptoEvmScheme } from '@x402/evm/upto/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import { type Address, createPublicClient, createWalletClient, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { expressPaywall } from '../src/express.ts';
import { Gate402Client, paymentResponseOf } from '../src/index.ts';
import type { UptoPayment } from '../src/upto-offer.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';

/**
 * protect() with an `upto` offer: a stock @x402/fetch buyer with @x402/evm's upto client signs the
 * maximum; the paywall has the facilitator verify it before the handler runs, and the handler settles
 * what the request cost with `payment.settle(amount)`. The buyer pays that, not the maximum, once.
 */
describe('gate402 paywall: upto on EVM (the handler states the final amount)', () => {
  let gateway: InProcessGateway;
  let close: (() => Promise<void>) | undefined;

  before(async () => {
    gateway = await startGateway();
  });
  after(async () => {
    await close?.();
    await gateway?.close();
  });

  it('offers upto with the facilitator’s address; the buyer pays what the handler settles, once', async () => {
    const premium = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    const payTo = (await premium.createWallet({ chain: 'evm' })).address;
    const anvil = (await premium.networks()).networks.find((n) => n.id === 'eip155:31337');
    const usdc = anvil?.tokens.find((t) => t.symbol === 'USDC')?.address as Address | undefined;
    assert.ok(usdc !== undefined && anvil?.rpcUrl);
    const chain = createPublicClient({ transport: http(anvil.rpcUrl) });
    const balanceOf = (address: Address) =>
      chain.readContract({
        address: usdc,
        abi: parseAbi(['function balanceOf(address) view returns (uint256)']),
        functionName: 'balanceOf',
        args: [address],
      });

    const { protect } = expressPaywall(premium);
    const app = express();
    const settledTwice: unknown[] = [];
    app.get(
      '/llm',
      protect({ price: '0.01', payTo, upto: { asset: usdc, max: '0.05' } }),
      async (req, res) => {
        const payment = res.locals.payment as UptoPayment;
        const used = String(req.query.used ?? '0.05');
        try {
          const settled = await payment.settle(used);
          // A second call answers the first one's settlement: nothing is settled twice.
          settledTwice.push(
            (await payment.settle('0.04')).settlement.transaction === settled.settlement.transaction,
          );
          res
            .set(settled.headers)
            .json({ scheme: payment.scheme, max: payment.max, charged: settled.amount });
        } catch (error) {
          res.status(402).json({ error: (error as Error).message });
        }
      },
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    close = () => new Promise((resolve) => server.close(() => resolve()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/llm`;

    const supported = await premium.facilitatorSupported();
    const facilitatorAddress = supported.kinds.find(
      (k) => k.scheme === 'upto' && k.network === 'eip155:31337',
    )?.extra?.facilitatorAddress;
    const offer = decodePaymentRequiredHeader((await fetch(url)).headers.get('payment-required') ?? '');
    assert.deepEqual(
      offer.accepts.find((a) => a.scheme === 'upto'),
      {
        scheme: 'upto',
        network: 'eip155:31337',
        asset: usdc,
        amount: '50000',
        payTo,
        maxTimeoutSeconds: 60,
        extra: { assetTransferMethod: 'permit2', facilitatorAddress },
      },
    );

    const account = privateKeyToAccount(generatePrivateKey());
    await premium.faucet({ address: account.address, amount: 1 });
    await premium.faucet({ address: account.address, amount: 1, token: 'USDC' });
    const wallet = createWalletClient({ account, transport: http(anvil.rpcUrl) });
    const approval = await wallet.sendTransaction({ ...createPermit2ApprovalTx(usdc), chain: null });
    await chain.waitForTransactionReceipt({ hash: approval });
    const buyer = x402Client.fromConfig({
      schemes: [{ network: 'eip155:31337', client: new UptoEvmScheme(account) }],
      spendControls: { allowedAssets: [{ network: 'eip155:31337', asset: usdc }] },
    });
    const before = await balanceOf(account.address);
    const paid = await wrapFetchWithPayment(fetch, buyer)(`${url}?used=0.0175`);
    assert.equal(paid.status, 200, await paid.clone().text());
    assert.deepEqual(await paid.json(), { scheme: 'upto', max: '0.05', charged: '0.0175' });
    const response = paymentResponseOf(paid);
    assert.deepEqual([response?.success, response?.payer], [true, account.address]);
    assert.match(response?.transaction ?? '', /^0x[0-9a-f]{64}$/);
    assert.equal(await balanceOf(account.address), before - 17_500n);
    assert.equal(await balanceOf(payTo as Address), 17_500n);
    assert.deepEqual(settledTwice, [true]);

    // More than the maximum: the handler's settle refuses it, nothing moves.
    const over = await wrapFetchWithPayment(fetch, buyer)(`${url}?used=0.06`);
    assert.equal(over.status, 402);
    assert.match(((await over.json()) as { error: string }).error, /more than the 0.05/);
    assert.equal(await balanceOf(account.address), before - 17_500n);
  });
});
