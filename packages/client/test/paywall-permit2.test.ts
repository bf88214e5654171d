import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { createPermit2ApprovalTx } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { createPublicClient, createWalletClient, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { Gate402Client, paymentResponseOf } from '../src/index.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';
import { type SellerApp, startSellerApp } from './support/seller-apps.ts';

/**
 * The paywall's `exact` EVM offer without the token's EIP-712 domain: a buyer could not sign EIP-3009
 * for it, so the offer is Permit2 (the gateway's facilitator settles it), and a stock @x402/evm buyer who
 * approved Permit2 once pays it.
 */
describe('gate402 paywall: exact on EVM through Permit2', () => {
  let gateway: InProcessGateway;
  const apps: SellerApp[] = [];

  before(async () => {
    gateway = await startGateway();
  });
  after(async () => {
    for (const app of apps) await app.close();
    await gateway?.close();
  });

  it('offers Permit2 for a token given without its EIP-712 domain; a stock buyer who approved Permit2 pays it', async () => {
    const premium = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    const payTo = (await premium.createWallet({ chain: 'evm' })).address;
    const anvil = (await premium.networks()).networks.find((n) => n.id === 'eip155:31337');
    const usdc = anvil?.tokens.find((t) => t.symbol === 'USDC')?.address as `0x${string}` | undefined;
    assert.ok(usdc !== undefined && anvil?.rpcUrl);
    const app = await startSellerApp('express', premium, {
      price: '0.01',
      payTo,
      exact: { asset: usdc, amount: '0.02' },
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
      extra: { assetTransferMethod: 'permit2' },
    });

    const account = privateKeyToAccount(generatePrivateKey());
    await premium.faucet({ address: account.address, amount: 1 });
    await premium.faucet({ address: account.address, amount: 1, token: 'USDC' });
    const wallet = createWalletClient({ account, transport: http(anvil.rpcUrl) });
    const approval = await wallet.sendTransaction({ ...createPermit2ApprovalTx(usdc), chain: null });
    await createPublicClient({ transport: http(anvil.rpcUrl) }).waitForTransactionReceipt({ hash: approval });
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
});
