import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import {
  getTransactionDecoder,
  getTransactionEncoder,
  type KeyPairSigner,
  partiallySignTransaction,
} from '@solana/kit';
import { type Browser, chromium, type Page } from 'playwright-core';
import { createPublicClient, http, parseAbi } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { Gate402Client } from '../../src/gate402-client.ts';
import type { ProtectOptions } from '../../src/paywall.ts';
import { type InProcessGateway, startGateway } from './gateway.ts';
import { buildPaywallPage } from './paywall-page-build.ts';
import { type SellerApp, startSellerApp } from './seller-apps.ts';

export const CHROMIUM = '/usr/bin/chromium';
const ERC20 = parseAbi(['function balanceOf(address) view returns (uint256)']);

/** What a test wallet does when the page asks it to sign. */
export type WalletMode = 'sign' | 'refuse';

/**
 * The seller paywall's browser page in Chromium, against the real gateway with the embedded localnet and
 * anvil, for a test file's suite: registers the suite's before and after hooks (a gateway, two keys, a
 * browser) and returns what its tests use — sellers, pages whose every request is recorded, injected
 * wallets signing with keys held by the test, balances. Each file that calls it has its own gateway.
 */
export function paywallBrowserSuite() {
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

  return {
    get premium() {
      return premium;
    },
    get funder() {
      return funder;
    },
    get usdcSol() {
      return usdcSol;
    },
    get usdcEvm() {
      return usdcEvm;
    },
    get solanaRpc() {
      return solanaRpc;
    },
    apps,
    seller,
    newPage,
    injectSolanaWallet,
    injectEvmWallet,
    solanaUsdc,
    evmUsdc,
    walletListed,
    onlyFrom,
  };
}
