import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import {
  generateKeyPairSigner,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  getTransactionEncoder,
  type KeyPairSigner,
  partiallySignTransaction,
} from '@solana/kit';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { type Browser, chromium, type Page } from 'playwright-core';
import { createPublicClient, http, parseAbi } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { BLOCKHASH_HEADER } from '../../src/browser-paywall/paywall-page.ts';
import { Gate402Client } from '../../src/gate402-client.ts';
import type { ProtectOptions } from '../../src/paywall.ts';
import { type InProcessGateway, startGateway } from '../support/gateway.ts';
import { buildPaywallPage } from '../support/paywall-page-build.ts';
import { type SellerApp, startSellerApp } from '../support/seller-apps.ts';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: paywall browser tests skipped`;
const ERC20 = parseAbi(['function balanceOf(address) view returns (uint256)']);

/** What a test wallet does when the page asks it to sign. */
type WalletMode = 'sign' | 'refuse';

/**
 * The seller paywall's browser page in Chromium, against the real gateway with the embedded localnet and
 * anvil: a visitor's injected wallet (a wallet-standard Solana wallet, or an EIP-1193 provider) signs with
 * a key held by this test (page.exposeFunction), the page pays, retries with PAYMENT-SIGNATURE and shows
 * the resource. Every request the page makes is recorded: none leaves the seller's origin.
 */
describe('the browser paywall page (protect() answering Accept: text/html)', { skip }, () => {
  let gateway: InProcessGateway;
  let premium: Gate402Client;
  let funder: Gate402Client;
  let browser: Browser;
  let usdcSol: string;
  let usdcEvm: string;
  let solanaRpc: string;
  let anvilRpc: string;
  const apps: SellerApp[] = [];

  before(async () => {
    await buildPaywallPage();
    // Slots of 100 ms: a blockhash stays valid 15 s, longer than a loaded machine takes from asking
    // the seller for it to the facilitator's settle.
    gateway = await startGateway({ LOCALNET_SLOT_MS: '100' });
    premium = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    funder = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey() });
    const { networks } = await premium.networks();
    const localnet = networks.find((n) => n.family === 'solana' && n.isDefault);
    const anvil = networks.find((n) => n.id === 'eip155:31337');
    usdcSol = localnet?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    usdcEvm = anvil?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    solanaRpc = localnet?.rpcUrl ?? '';
    anvilRpc = anvil?.rpcUrl ?? '';
    assert.ok(usdcSol && usdcEvm && solanaRpc && anvilRpc);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  after(async () => {
    await browser?.close();
    for (const app of apps) await app.close();
    await gateway?.close();
  });

  async function seller(options: Omit<ProtectOptions, 'payTo'>, chain: 'solana' | 'evm') {
    const payTo = (await premium.createWallet({ chain })).address;
    // The Solana payee's token account exists (a first mint creates it).
    if (chain === 'solana') await premium.faucet({ address: payTo, amount: 0.01, token: 'USDC' });
    const app = await startSellerApp('express', premium, { ...options, payTo });
    apps.push(app);
    return { app, payTo };
  }

  /** A page whose every request is recorded, and every CSP violation and page error kept. */
  async function newPage(): Promise<{ page: Page; requests: URL[]; problems: string[] }> {
    const page = await browser.newPage();
    page.setDefaultTimeout(30_000);
    const requests: URL[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requests.push(new URL(request.url())));
    page.on('console', (message) => {
      // The 402 itself (the page, a refused payment) is logged as a failed load: it is the point.
      if (message.type() === 'error' && !/status of 402/.test(message.text())) problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    return { page, requests, problems };
  }

  /** A wallet-standard Solana wallet in the page, signing with `signer` in this process. */
  async function injectSolanaWallet(page: Page, signer: KeyPairSigner, mode: { value: WalletMode }) {
    const asked: Uint8Array[] = [];
    await page.exposeFunction('gate402TestSolanaSign', async (transaction: string) => {
      const bytes = new Uint8Array(Buffer.from(transaction, 'base64'));
      asked.push(bytes);
      if (mode.value === 'refuse') return null;
      const signed = await partiallySignTransaction([signer.keyPair], getTransactionDecoder().decode(bytes));
      return Buffer.from(getTransactionEncoder().encode(signed)).toString('base64');
    });
    // Plain JavaScript (tsx would add its helpers to a function passed here, which the page lacks).
    await page.addInitScript({
      content: `(() => {
        const account = {
          address: ${JSON.stringify(signer.address)},
          publicKey: new Uint8Array(32),
          chains: ['solana:localnet', 'solana:devnet'],
          features: ['solana:signTransaction'],
        };
        const wallet = {
          version: '1.0.0',
          name: 'Test Solana Wallet',
          icon: 'data:image/svg+xml;base64,PHN2Zy8+',
          chains: ['solana:localnet', 'solana:devnet'],
          accounts: [],
          features: {
            'standard:connect': {
              version: '1.0.0',
              connect: async () => {
                wallet.accounts = [account];
                return { accounts: wallet.accounts };
              },
            },
            'solana:signTransaction': {
              version: '1.0.0',
              supportedTransactionVersions: [0],
              signTransaction: async (...inputs) => {
                const out = [];
                for (const input of inputs) {
                  let binary = '';
                  for (const b of input.transaction) binary += String.fromCharCode(b);
                  const signed = await window.gate402TestSolanaSign(btoa(binary));
                  if (signed === null) throw new Error('User rejected the request.');
                  out.push({ signedTransaction: Uint8Array.from(atob(signed), (c) => c.charCodeAt(0)) });
                }
                return out;
              },
            },
          },
        };
        const callback = ({ register }) => register(wallet);
        window.dispatchEvent(new CustomEvent('wallet-standard:register-wallet', { detail: callback }));
        window.addEventListener('wallet-standard:app-ready', (event) => callback(event.detail));
      })();`,
    });
    return asked;
  }

  /** An EIP-1193 provider as window.ethereum, signing with `key` in this process. */
  async function injectEvmWallet(page: Page, key: `0x${string}`, mode: { value: WalletMode }) {
    const account = privateKeyToAccount(key);
    const typedData: Record<string, unknown>[] = [];
    await page.exposeFunction('gate402TestEvm', async (method: string, params: unknown[]) => {
      switch (method) {
        case 'eth_requestAccounts':
        case 'eth_accounts':
          // Lower case, as many wallets answer: the page checksums it as the stock client does.
          return { result: [account.address.toLowerCase()] };
        case 'eth_chainId':
          return { result: '0x7a69' };
        case 'eth_signTypedData_v4': {
          if (mode.value === 'refuse')
            return { error: { code: 4001, message: 'User rejected the request.' } };
          assert.equal(String(params[0]).toLowerCase(), account.address.toLowerCase());
          const data = JSON.parse(String(params[1])) as {
            types: Record<string, { name: string; type: string }[]>;
            domain: Record<string, unknown>;
            primaryType: string;
            message: Record<string, unknown>;
          };
          typedData.push(data);
          const { EIP712Domain: _domain, ...types } = data.types;
          return {
            result: await account.signTypedData({
              domain: data.domain,
              types,
              primaryType: data.primaryType,
              message: data.message,
            }),
          };
        }
        default:
          return { error: { code: 4200, message: `unsupported ${method}` } };
      }
    });
    await page.addInitScript({
      content: `window.ethereum = {
        request: async ({ method, params }) => {
          const answer = await window.gate402TestEvm(method, params ?? []);
          if (answer.error !== undefined) throw answer.error;
          return answer.result;
        },
      };`,
    });
    return { account, typedData };
  }

  async function solanaUsdc(address: string): Promise<bigint> {
    const portfolio = await premium.portfolio(address);
    return BigInt(portfolio.tokens.find((t) => t.mint === usdcSol)?.amount ?? '0');
  }

  async function evmUsdc(address: `0x${string}`): Promise<bigint> {
    const client = createPublicClient({ transport: http(anvilRpc) });
    return client.readContract({
      address: usdcEvm as `0x${string}`,
      abi: ERC20,
      functionName: 'balanceOf',
      args: [address],
    });
  }

  /** Waits until the page lists the wallet; on a timeout, says what the page showed instead. */
  async function walletListed(page: Page, name: string, problems: readonly string[]): Promise<void> {
    try {
      await page.locator('#pay-wallet option', { hasText: name }).waitFor({ state: 'attached' });
    } catch (error) {
      const form = await page.locator('main').innerHTML();
      throw new Error(`${name} not listed: ${form}\n${problems.join('\n')}`, { cause: error });
    }
  }

  function onlyFrom(requests: readonly URL[], origin: string): void {
    const elsewhere = requests.filter((u) => u.origin !== origin && u.protocol !== 'data:');
    assert.deepEqual(elsewhere.map(String), [], 'the paywall page asked another origin');
  }

  it('Solana: a wallet-standard wallet pays 0.01 USDC, the buyer loses exactly that, the page shows the resource', async () => {
    const { app, payTo } = await seller(
      { price: '0.01', description: 'the forecast', exact: { asset: usdcSol, amount: '0.01' } },
      'solana',
    );
    const buyer = await generateKeyPairSigner();
    await funder.faucet({ address: buyer.address, amount: 1, token: 'USDC' });
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
    const history = await premium.paymentHistory(payTo, { type: 'received' });
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
    const stockPayload = await new ExactSvmScheme(buyer, { rpcUrl: solanaRpc }).createPaymentPayload(2, {
      scheme: 'exact',
      // The stock client knows the localnet by the devnet id it answers for (only to pick an RPC client).
      network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
      asset: usdcSol,
      amount: '10000',
      payTo,
      maxTimeoutSeconds: 60,
      extra: {
        feePayer,
        recentBlockhash: ours.lifetimeToken,
        lastValidBlockHeight: '0',
      },
    });
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
      { price: '0.01', exact: { asset: usdcSol, amount: '0.01' } },
      'solana',
    );
    const buyer = await generateKeyPairSigner();
    await funder.faucet({ address: buyer.address, amount: 1, token: 'USDC' });
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
    const received = await premium.paymentHistory(payTo, { type: 'received' });
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
        exact: { asset: usdcEvm, amount: '0.02', extra: { name: 'USD Coin', version: '2' } },
      },
      'evm',
    );
    const { page, requests, problems } = await newPage();
    const { account, typedData } = await injectEvmWallet(page, generatePrivateKey(), { value: 'sign' });
    await funder.faucet({ address: account.address, amount: 1, token: 'USDC' });

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
      verifyingContract: usdcEvm,
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
      { price: '0.01', exact: { asset: usdcEvm, amount: '0.02', extra: { name: 'USD Coin', version: '2' } } },
      'evm',
    );
    const { page, problems } = await newPage();
    const { account } = await injectEvmWallet(page, generatePrivateKey(), { value: 'refuse' });
    await funder.faucet({ address: account.address, amount: 1, token: 'USDC' });
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
    const { app } = await seller({ price: '0.01', exact: { asset: usdcSol, amount: '0.01' } }, 'solana');
    const { page, problems } = await newPage();
    await page.goto(app.url);
    await page.getByText(/No Solana wallet that signs for solana:\w+ was found in this browser/).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Pay 0.01 USDC' }).isDisabled(), true);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('JSON clients still get the JSON 402; a native-only offer explains itself without a pay form', async () => {
    const { app } = await seller({ price: '0.01', exact: { asset: usdcSol, amount: '0.01' } }, 'solana');
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
      const other = await startSellerApp(framework, premium, {
        price: '0.01',
        payTo: (await premium.createWallet({ chain: 'evm' })).address,
        exact: { asset: usdcEvm, amount: '0.02', extra: { name: 'USD Coin', version: '2' } },
      });
      apps.push(other);
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
      { price: '0.01', exact: { asset: usdcSol, amount: '0.01' }, paywallPage: false },
      'solana',
    );
    const plain = await fetch(off.app.url, { headers: { accept: 'text/html', 'user-agent': 'Mozilla/5.0' } });
    assert.match(plain.headers.get('content-type') ?? '', /^application\/json/);
  });
});
