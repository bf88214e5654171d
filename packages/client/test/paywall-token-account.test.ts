import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import { wrapFetchWithPayment } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { Gate402Client } from '../src/gate402-client.ts';
import { isGate402Error } from '../src/gate402-error.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';
import { type SellerApp, startSellerApp } from './support/seller-apps.ts';

/** Stock Solana clients know only mainnet, devnet and testnet: the localnet is reached as devnet. */
const DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';

/**
 * A Solana payee needs a token account for the asset before x402 `exact` can pay it (the buyer's
 * transaction does not open one). The seller paywall has the gateway open it for a custodial wallet when
 * it first prices the option, the wallet paying the deposit from its SOL; the README's example — a
 * freshly created custodial wallet as payTo — is then paid by a stock @x402/fetch buyer.
 */
describe('gate402 paywall: the Solana payee’s token account', () => {
  let gateway: InProcessGateway;
  let premium: Gate402Client;
  let other: Gate402Client;
  let usdc: string;
  let rpcUrl: string;
  const apps: SellerApp[] = [];

  before(async () => {
    gateway = await startGateway();
    premium = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    other = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    const { networks } = await premium.networks();
    const localnet = networks.find((n) => n.family === 'solana' && n.isDefault);
    usdc = localnet?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    rpcUrl = localnet?.rpcUrl ?? '';
  });
  after(async () => {
    for (const app of apps) await app.close();
    await gateway?.close();
  });

  async function solBalance(address: string): Promise<bigint> {
    const portfolio = await premium.portfolio(address);
    return BigInt(portfolio.native.amount);
  }

  it('a fresh custodial payTo with SOL: its token account is opened when first priced, once, and a stock buyer pays it', async () => {
    const payTo = (await premium.createWallet({ chain: 'solana' })).address;
    await premium.faucet({ address: payTo, amount: 0.01 });
    const app = await startSellerApp('express', premium, {
      price: '0.01',
      payTo,
      exact: { asset: usdc, amount: '0.01', network: DEVNET },
    });
    apps.push(app);
    const before = await solBalance(payTo);
    // Two first requests at once: one transaction opens the account.
    const [a, b] = await Promise.all([fetch(app.url), fetch(app.url)]);
    assert.deepEqual([a.status, b.status], [402, 402], await a.clone().text());
    const opened = await premium.openTokenAccount(payTo, { asset: 'USDC' });
    assert.deepEqual([opened.exists, opened.created, opened.signature], [true, false, null]);
    const paidRent = before - (await solBalance(payTo));
    // One rent-exempt deposit (2,039,280 lamports for a 165-byte account) and one signature's fee.
    assert.equal(paidRent, 2_039_280n + 5_000n);

    const signer = await generateKeyPairSigner();
    await other.faucet({ address: signer.address, amount: 1, token: 'USDC' });
    const stock = x402Client.fromConfig({
      schemes: [{ network: DEVNET, client: new ExactSvmScheme(signer, { rpcUrl }) }],
      spendControls: { allowedAssets: [{ network: DEVNET, asset: usdc }] },
    });
    const paid = await wrapFetchWithPayment(fetch, stock)(app.url);
    assert.equal(paid.status, 200, await paid.clone().text());
    const received = await premium.paymentHistory(payTo, { type: 'received' });
    assert.deepEqual(
      received.payments.map((p) => [p.sender, p.amount]),
      [[signer.address, 0.01]],
    );
  });

  it('POST /wallets/{address}/token-accounts opens once under concurrent asks, and refuses what it cannot open', async () => {
    const wallet = (await premium.createWallet({ chain: 'solana' })).address;
    // Without SOL for the deposit: 422, nothing opened.
    await assert.rejects(premium.openTokenAccount(wallet, { asset: 'USDC' }), (error) =>
      isGate402Error(error, 'INSUFFICIENT_BALANCE'),
    );
    await premium.faucet({ address: wallet, amount: 0.01 });
    const before = await solBalance(wallet);
    const answers = await Promise.all([1, 2, 3].map(() => premium.openTokenAccount(wallet, { asset: usdc })));
    assert.equal(new Set(answers.map((x) => x.signature)).size, 1, JSON.stringify(answers));
    assert.ok(answers.every((x) => x.exists && x.account === answers[0]?.account));
    assert.equal(before - (await solBalance(wallet)), 2_039_280n + 5_000n);
    // Another account's wallet, an EVM address, something that is no mint.
    await assert.rejects(other.openTokenAccount(wallet, { asset: 'USDC' }), (error) =>
      isGate402Error(error, 'FORBIDDEN'),
    );
    const evm = (await premium.createWallet({ chain: 'evm' })).address;
    await assert.rejects(premium.openTokenAccount(evm, { asset: 'USDC' }), (error) =>
      isGate402Error(error, 'INVALID_PARAMETERS'),
    );
    await assert.rejects(premium.openTokenAccount(wallet, { asset: wallet }), (error) =>
      isGate402Error(error, 'TOKEN_NOT_FOUND'),
    );
  });

  it('a custodial payTo without SOL to open it: the paywall answers 500 saying so, before any buyer pays', async () => {
    const payTo = (await premium.createWallet({ chain: 'solana' })).address;
    const app = await startSellerApp('hono', premium, {
      price: '0.01',
      payTo,
      exact: { asset: usdc, amount: '0.01', network: DEVNET },
    });
    apps.push(app);
    const res = await fetch(app.url);
    assert.equal(res.status, 500);
    assert.match(((await res.json()) as { error: string }).error, /no token account .*fund it with SOL/);
  });
});
