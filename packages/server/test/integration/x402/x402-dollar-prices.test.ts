import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { convertToTokenAmount } from '@x402/core/utils';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import { ExactEvmScheme as EvmSellerScheme } from '@x402/evm/exact/server';
import { wrapFetchWithPayment } from '@x402/fetch';
import { ExactSvmScheme as SvmBuyerScheme } from '@x402/svm/exact/client';
import { ExactSvmScheme as SvmSellerScheme } from '@x402/svm/exact/server';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { startShop, type TestShop } from '../../support/x402-shop.ts';

/** Solana devnet's USDC: the asset stock @x402/svm sellers price `'$0.01'` on devnet in. */
const DEVNET_USDC = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU';

/**
 * Stock @x402/express sellers that write their price in dollars (`'$0.01'`), with gate402 as their
 * facilitator, on the embedded chains. On Solana the embedded localnet's USDC sits at devnet's USDC
 * address, and the localnet answers for devnet: the stock default asset is the embedded USDC, with no
 * seller code. On anvil (eip155:31337, which has no default asset in @x402/evm) the seller registers a
 * money parser naming the embedded USDC — the lines docs/x402.md gives.
 */
describe('x402: dollar prices on the embedded chains', () => {
  let chain: TestChain;
  let evm: TestEvm;
  let gw: TestGateway;
  let shop: TestShop | undefined;
  let seller: { key: string; solana: string; evm: string };
  let gatewayUrl: string;

  before(async () => {
    [chain, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter, evm.adapter]) });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    gatewayUrl = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    const caller = await gw.newCaller('premium');
    const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
      callAs(gw, caller.key, method, url, payload);
    seller = {
      key: caller.key,
      solana: (await api('POST', '/wallets', { chain: 'solana' })).body.address,
      evm: (await api('POST', '/wallets', { chain: 'evm' })).body.address,
    };
    await api('POST', '/faucet', { address: seller.solana, amount: 0.01, token: 'USDC' });

    // docs/x402.md, "Dollar prices": the embedded anvil's USDC as the default asset of eip155:31337.
    const usdc = evm.usdc.address;
    const evmScheme = new EvmSellerScheme().registerMoneyParser(async (amount, network) =>
      network === 'eip155:31337'
        ? {
            amount: convertToTokenAmount(String(amount), 6),
            asset: usdc,
            extra: { name: 'USD Coin', version: '2' },
          }
        : null,
    );
    shop = await startShop({
      gatewayUrl,
      key: caller.key,
      schemes: [
        [SOLANA_DEVNET_ID, new SvmSellerScheme()],
        ['eip155:31337', evmScheme],
      ],
      routes: {
        '/sol': {
          accepts: { scheme: 'exact', network: SOLANA_DEVNET_ID, payTo: seller.solana, price: '$0.01' },
          body: { paid: 'sol' },
        },
        '/evm': {
          accepts: { scheme: 'exact', network: 'eip155:31337', payTo: seller.evm, price: '$0.01' },
          body: { paid: 'evm' },
        },
      },
    });
  });

  it('a stock seller given a Standard key: its paid routes answer 500 at start, and what it logs says why and what to do', async () => {
    const standard = await gw.newCaller('standard');
    const logged: string[] = [];
    const [error, warn] = [console.error, console.warn];
    console.error = (...args: unknown[]) => void logged.push(args.map(String).join(' '));
    console.warn = console.error;
    let standardShop: TestShop | undefined;
    try {
      standardShop = await startShop({
        gatewayUrl,
        key: standard.key,
        schemes: [[SOLANA_DEVNET_ID, new SvmSellerScheme()]],
        routes: {
          '/sol': {
            accepts: { scheme: 'exact', network: SOLANA_DEVNET_ID, payTo: seller.solana, price: '$0.01' },
            body: {},
          },
        },
      });
      const res = await fetch(`${standardShop.url}/sol`);
      assert.equal(res.status, 500);
    } finally {
      [console.error, console.warn] = [error, warn];
      await standardShop?.close();
    }
    const said = logged.join('\n');
    assert.match(said, /getSupported failed \(403\)/);
    assert.match(
      said,
      /The standard plan does not include facilitator \(premium or enterprise do\): an x402 seller using this key cannot start/,
    );
  });

  after(async () => {
    await shop?.close();
    await gw?.close();
    await Promise.all([chain?.close(), evm?.close()]);
    evm?.dispose();
  });

  it("Solana: '$0.01' on devnet is 10000 units of the embedded USDC (at devnet's USDC address), paid by a stock buyer", async () => {
    assert.equal(chain.localnet.usdcMint.address, DEVNET_USDC);
    const offer = decodePaymentRequiredHeader(
      (await fetch(`${shop?.url}/sol`)).headers.get('payment-required') ?? '',
    );
    assert.deepEqual([offer.accepts[0]?.asset, offer.accepts[0]?.amount], [DEVNET_USDC, '10000']);
    const buyer = await generateKeyPairSigner();
    await callAs(gw, seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const client = x402Client.fromConfig({
      schemes: [
        { network: SOLANA_DEVNET_ID, client: new SvmBuyerScheme(buyer, { rpcUrl: chain.localnet.rpcUrl }) },
      ],
    });
    const res = await wrapFetchWithPayment(fetch, client)(`${shop?.url}/sol`);
    assert.equal(res.status, 200, await res.clone().text());
    const history = await callAs(gw, seller.key, 'GET', `/payment/history/${seller.solana}`);
    assert.ok(
      history.body.payments.some(
        (p: { sender: string; amount: number }) => p.sender === buyer.address && p.amount === 0.01,
      ),
    );
  });

  it("EVM: '$0.01' on eip155:31337 with the documented money parser is 10000 units of the embedded USDC, paid by a stock buyer", async () => {
    const offer = decodePaymentRequiredHeader(
      (await fetch(`${shop?.url}/evm`)).headers.get('payment-required') ?? '',
    );
    assert.deepEqual([offer.accepts[0]?.asset, offer.accepts[0]?.amount], [evm.usdc.address, '10000']);
    const account = privateKeyToAccount(generatePrivateKey());
    await callAs(gw, seller.key, 'POST', '/faucet', { address: account.address, amount: 1, token: 'USDC' });
    const client = x402Client.fromConfig({
      schemes: [{ network: 'eip155:31337', client: new EvmBuyerScheme(account) }],
      // Not a default asset of @x402/evm: a stock buyer pays it only when told to trust it.
      spendControls: { allowedAssets: [{ network: 'eip155:31337', asset: evm.usdc.address }] },
    });
    const res = await wrapFetchWithPayment(fetch, client)(`${shop?.url}/evm`);
    assert.equal(res.status, 200, await res.clone().text());
  });
});
