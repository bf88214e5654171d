import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  generateKeyPairSigner,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from '@solana/kit';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { generatePrivateKey } from 'viem/accounts';
import { BLOCKHASH_HEADER } from '../../src/browser-paywall/paywall-page.ts';
import { CHROMIUM, paywallBrowserSuite, type WalletMode } from '../support/paywall-browser.ts';
import { startSellerApp } from '../support/seller-apps.ts';

const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: paywall browser tests skipped`;

/**
 * The seller paywall's browser page in Chromium, against the real gateway with the embedded localnet and
 * anvil: a visitor's injected wallet (a wallet-standard Solana wallet, or an EIP-1193 provider) signs with
 * a key held by this test (page.exposeFunction), the page pays, retries with PAYMENT-SIGNATURE and shows
 * the resource. Every request the page makes is recorded: none leaves the seller's origin.
 */
describe('the browser paywall page (protect() answering Accept: text/html)', { skip }, () => {
  const suite = paywallBrowserSuite();
  const {
    seller,
    newPage,
    injectSolanaWallet,
    injectEvmWallet,
    solanaUsdc,
    evmUsdc,
    walletListed,
    onlyFrom,
  } = suite;

  it('Solana: a wallet-standard wallet pays 0.01 USDC, the buyer loses exactly that, the page shows the resource', async () => {
    const { app, payTo } = await seller(
      { price: '0.01', description: 'the forecast', exact: { asset: suite.usdcSol, amount: '0.01' } },
      'solana',
    );
    const buyer = await generateKeyPairSigner();
    await suite.funder.faucet({ address: buyer.address, amount: 1, token: 'USDC' });
    const { page, requests, problems } = await newPage();
    const asked = await injectSolanaWallet(page, buyer, { value: 'sign' });

    const response = await page.goto(app.url);
    assert.equal(response?.status(), 402);
    const headers = response?.headers() ?? {};
    assert.match(headers['content-type'] ?? '', /^text\/html/);
    const csp = headers['content-security-policy'] ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    assert.match(csp, /connect-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    // x402 clients in a browser still find the challenge in its header.
    assert.ok(headers['payment-required']);

    await page.getByRole('heading', { level: 1, name: 'Payment required' }).waitFor();
    await page.getByText('This site sells the forecast.').waitFor();
    await page.getByRole('listitem').filter({ hasText: '0.01 USDC on' }).first().waitFor();
    // The native offer is explained too, and said to need an x402 client.
    await page
      .getByRole('listitem')
      .filter({ hasText: /0\.01 SOL on .*gate402-native/ })
      .waitFor();
    const wallet = page.getByLabel('Wallet');
    await walletListed(page, 'Test Solana Wallet', problems);
    assert.equal(await wallet.inputValue(), '0');

    const before = [await solanaUsdc(buyer.address), await solanaUsdc(payTo)] as const;
    // Keyboard only: focus the button and press Enter.
    await page.getByRole('button', { name: 'Pay 0.01 USDC' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Your purchase' }).waitFor();
    assert.equal(
      await page.evaluate('document.activeElement?.id'),
      'result-heading',
      'focus moves to the purchase',
    );
    await page.getByText('"forecast": "sunny"').waitFor();
    assert.match((await page.getByRole('status').textContent()) ?? '', /^Paid\./);
    assert.match(
      (await page.locator('#result-receipt').textContent()) ?? '',
      /^Transaction: [1-9A-HJ-NP-Za-km-z]{80,90}$/,
    );

    const after = [await solanaUsdc(buyer.address), await solanaUsdc(payTo)] as const;
    assert.equal(before[0] - after[0], 10_000n, 'the buyer paid exactly the price');
    assert.equal(after[1] - before[1], 10_000n, 'the payee got exactly the price');
    const history = await suite.premium.paymentHistory(payTo, { type: 'received' });
    assert.equal(history.payments.filter((p) => p.sender === buyer.address).length, 1);

    // What the wallet signed is the stock @x402/svm client's transaction: the facilitator pays the fee,
    // the same accounts and instructions (the memo is a random nonce in both).
    assert.equal(asked.length, 1);
    const offered = decodePaymentRequiredHeader(headers['payment-required'] ?? '').accepts[1];
    const feePayer = offered?.extra?.feePayer;
    assert.ok(typeof feePayer === 'string');
    const ours = getCompiledTransactionMessageDecoder().decode(
      getTransactionDecoder().decode(asked[0] as Uint8Array).messageBytes,
    );
    assert.equal(ours.staticAccounts[0], feePayer);
    const stockPayload = await new ExactSvmScheme(buyer, { rpcUrl: suite.solanaRpc }).createPaymentPayload(
      2,
      {
        scheme: 'exact',
        // The stock client knows the localnet by the devnet id it answers for (only to pick an RPC client).
        network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
        asset: suite.usdcSol,
        amount: '10000',
        payTo,
        maxTimeoutSeconds: 60,
        extra: {
          feePayer,
          recentBlockhash: ours.lifetimeToken,
          lastValidBlockHeight: '0',
        },
      },
    );
    const stock = getCompiledTransactionMessageDecoder().decode(
      getTransactionDecoder().decode(Buffer.from(String(stockPayload.payload.transaction), 'base64'))
        .messageBytes,
    );
    // Compared as plain arrays (one decoder answers Buffers, the other Uint8Arrays); the memo's bytes apart.
    const withoutMemoData = (m: object) => {
      const message = m as { instructions: { data?: Uint8Array }[] };
      return {
        ...m,
        instructions: message.instructions.map((ix, i) => ({
          ...ix,
          data: i === 3 || ix.data === undefined ? undefined : [...ix.data],
        })),
      };
    };
    assert.deepEqual(withoutMemoData(ours), withoutMemoData(stock));

    onlyFrom(requests, new URL(app.url).origin);
    assert.ok(
      requests.some((u) => u.href === app.url),
      'the retry went to the resource',
    );
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('Solana: a wallet that refuses → a clear message, focus on it, nothing paid, no payment sent', async () => {
    const { app, payTo } = await seller(
      { price: '0.01', exact: { asset: suite.usdcSol, amount: '0.01' } },
      'solana',
    );
    const buyer = await generateKeyPairSigner();
    await suite.funder.faucet({ address: buyer.address, amount: 1, token: 'USDC' });
    const { page, requests, problems } = await newPage();
    const mode = { value: 'refuse' as WalletMode };
    await injectSolanaWallet(page, buyer, mode);
    const paymentsSent: string[] = [];
    page.on('request', (request) => {
      const header = request.headers()['payment-signature'];
      if (header !== undefined) paymentsSent.push(header);
    });
    await page.goto(app.url);
    await walletListed(page, 'Test Solana Wallet', problems);
    const before = await solanaUsdc(buyer.address);
    await page.getByRole('button', { name: 'Pay 0.01 USDC' }).click();
    const alert = page.getByRole('alert');
    await alert
      .getByText('Test Solana Wallet did not sign: User rejected the request.. Nothing was paid.')
      .waitFor();
    assert.equal(await page.evaluate('document.activeElement?.id'), 'pay-error');
    assert.equal(
      await page.getByRole('button', { name: 'Pay 0.01 USDC' }).isEnabled(),
      true,
      'can try again',
    );
    assert.deepEqual(paymentsSent, []);
    assert.equal(await solanaUsdc(buyer.address), before);
    const received = await suite.premium.paymentHistory(payTo, { type: 'received' });
    assert.equal(received.payments.filter((p) => p.sender === buyer.address).length, 0);

    // The visitor changes their mind: the same page pays.
    mode.value = 'sign';
    await page.getByRole('button', { name: 'Pay 0.01 USDC' }).click();
    await page.getByRole('heading', { name: 'Your purchase' }).waitFor();
    assert.equal(before - (await solanaUsdc(buyer.address)), 10_000n);
    onlyFrom(requests, new URL(app.url).origin);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('EVM: an EIP-1193 wallet signs the EIP-3009 authorization, the buyer loses exactly 0.02 USDC, the page shows the resource', async () => {
    const { app, payTo } = await seller(
      {
        price: '0.01',
        description: 'the forecast',
        exact: { asset: suite.usdcEvm, amount: '0.02', extra: { name: 'USD Coin', version: '2' } },
      },
      'evm',
    );
    const { page, requests, problems } = await newPage();
    const { account, typedData } = await injectEvmWallet(page, generatePrivateKey(), { value: 'sign' });
    await suite.funder.faucet({ address: account.address, amount: 1, token: 'USDC' });

    const response = await page.goto(app.url);
    assert.equal(response?.status(), 402);
    assert.match(response?.headers()['content-security-policy'] ?? '', /default-src 'none'/);
    await walletListed(page, 'Browser wallet (window.ethereum)', problems);
    const before = [await evmUsdc(account.address), await evmUsdc(payTo as `0x${string}`)] as const;
    await page.getByRole('button', { name: 'Pay 0.02 USDC' }).click();
    await page.getByRole('heading', { name: 'Your purchase' }).waitFor();
    await page.getByText('"forecast": "sunny"').waitFor();
    assert.match(
      (await page.locator('#result-receipt').textContent()) ?? '',
      /^Transaction: 0x[0-9a-f]{64}$/,
    );
    const after = [await evmUsdc(account.address), await evmUsdc(payTo as `0x${string}`)] as const;
    assert.equal(before[0] - after[0], 20_000n, 'the buyer paid exactly the price');
    assert.equal(after[1] - before[1], 20_000n, 'the payee got exactly the price');

    // The stock @x402/evm client's TransferWithAuthorization under the token's EIP-712 domain.
    assert.equal(typedData.length, 1);
    const signed = typedData[0] as { domain: Record<string, unknown>; message: Record<string, unknown> };
    assert.deepEqual(signed.domain, {
      name: 'USD Coin',
      version: '2',
      chainId: 31337,
      verifyingContract: suite.usdcEvm,
    });
    assert.deepEqual(
      [signed.message.from, signed.message.to, signed.message.value, signed.message.validAfter],
      [account.address, payTo, '20000', '0'],
    );
    onlyFrom(requests, new URL(app.url).origin);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('EVM: the wallet declines (EIP-1193 4001) → a clear message, nothing paid', async () => {
    const { app } = await seller(
      {
        price: '0.01',
        exact: { asset: suite.usdcEvm, amount: '0.02', extra: { name: 'USD Coin', version: '2' } },
      },
      'evm',
    );
    const { page, problems } = await newPage();
    const { account } = await injectEvmWallet(page, generatePrivateKey(), { value: 'refuse' });
    await suite.funder.faucet({ address: account.address, amount: 1, token: 'USDC' });
    const paymentsSent: string[] = [];
    page.on('request', (request) => {
      const header = request.headers()['payment-signature'];
      if (header !== undefined) paymentsSent.push(header);
    });
    await page.goto(app.url);
    await walletListed(page, 'Browser wallet (window.ethereum)', problems);
    const before = await evmUsdc(account.address);
    await page.getByRole('button', { name: 'Pay 0.02 USDC' }).click();
    await page
      .getByRole('alert')
      .getByText('Browser wallet (window.ethereum) did not sign: you declined the request. Nothing was paid.')
      .waitFor();
    assert.deepEqual(paymentsSent, []);
    assert.equal(await evmUsdc(account.address), before);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('no wallet in the browser: the page says so and the button stays disabled', async () => {
    const { app } = await seller(
      { price: '0.01', exact: { asset: suite.usdcSol, amount: '0.01' } },
      'solana',
    );
    const { page, problems } = await newPage();
    await page.goto(app.url);
    await page.getByText(/No Solana wallet that signs for solana:\w+ was found in this browser/).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Pay 0.01 USDC' }).isDisabled(), true);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('JSON clients still get the JSON 402; a native-only offer explains itself without a pay form', async () => {
    const { app } = await seller(
      { price: '0.01', exact: { asset: suite.usdcSol, amount: '0.01' } },
      'solana',
    );
    for (const headers of [
      {},
      { accept: 'application/json' },
      // The stock rule: text/html from a user agent that is not a browser is an API client.
      { accept: 'text/html', 'user-agent': 'curl/8.5.0' },
      { accept: 'application/json', 'user-agent': 'Mozilla/5.0' },
    ]) {
      const answer = await fetch(app.url, { headers });
      assert.equal(answer.status, 402);
      assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
      const body = (await answer.json()) as { x402Version: number; error: string };
      assert.deepEqual([body.x402Version, body.error], [1, 'payment required']);
      assert.ok(answer.headers.get('payment-required'));
    }
    // A browser that presents a payment is answered as an x402 client (the stock middleware does the same).
    const refused = await fetch(app.url, {
      headers: { accept: 'text/html', 'user-agent': 'Mozilla/5.0', 'payment-signature': 'bm90IGpzb24=' },
    });
    assert.equal(refused.status, 402);
    assert.match(refused.headers.get('content-type') ?? '', /^application\/json/);
    // The blockhash the page asks for: only for a network this resource takes exact payments on.
    const wrong = await fetch(app.url, { headers: { [BLOCKHASH_HEADER]: 'solana:nowhere' } });
    assert.equal(wrong.status, 400);

    // Every adapter sends the page as HTML under its policy (Express above; Fastify and Hono here).
    for (const framework of ['fastify', 'hono'] as const) {
      const other = await startSellerApp(framework, suite.premium, {
        price: '0.01',
        payTo: (await suite.premium.createWallet({ chain: 'evm' })).address,
        exact: { asset: suite.usdcEvm, amount: '0.02', extra: { name: 'USD Coin', version: '2' } },
      });
      suite.apps.push(other);
      const html = await fetch(other.url, {
        headers: {
          accept: 'text/html,application/xhtml+xml',
          'user-agent': 'Mozilla/5.0 (X11; Linux x86_64)',
        },
      });
      assert.equal(html.status, 402, framework);
      assert.match(html.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/, framework);
      assert.match(
        html.headers.get('content-security-policy') ?? '',
        /^default-src 'none'; script-src 'sha256-/,
      );
      assert.ok(html.headers.get('payment-required'), framework);
      const text = await html.text();
      assert.match(text, /^<!doctype html>/, framework);
      assert.match(text, /<li>0\.02 USDC on [^<]+<\/li>/, framework);
    }

    const native = await seller({ price: '0.01', description: 'the forecast' }, 'solana');
    const { page, problems } = await newPage();
    const response = await page.goto(native.app.url);
    assert.equal(response?.status(), 402);
    await page
      .getByRole('listitem')
      .filter({ hasText: /^0\.01 SOL on .*gate402-native/ })
      .waitFor();
    await page.getByText('None of these can be paid from this page').waitFor();
    assert.equal(await page.locator('form').count(), 0);
    assert.deepEqual(problems, []);
    await page.close();

    const off = await seller(
      { price: '0.01', exact: { asset: suite.usdcSol, amount: '0.01' }, paywallPage: false },
      'solana',
    );
    const plain = await fetch(off.app.url, { headers: { accept: 'text/html', 'user-agent': 'Mozilla/5.0' } });
    assert.match(plain.headers.get('content-type') ?? '', /^application\/json/);
  });
});
