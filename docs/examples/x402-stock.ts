/**
 * A stock x402 seller (`@x402/express`) and buyer (`@x402/fetch`) with gate402 as their facilitator, on the
 * embedded chains `npm start` runs. Nothing here is gate402's own code: only its HTTP API (for wallets and
 * the local faucet) and its facilitator at /facilitator.
 *
 *   GATE402_KEY=g402_sk_… npx tsx docs/examples/x402-stock.ts      # a Premium (or Enterprise) key
 *
 * (`GATE402_URL` if the gateway is not on http://127.0.0.1:8402.) A test runs it against a real gateway:
 * packages/server/test/integration/x402/x402-docs-example.test.ts.
 */
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import { decodePaymentResponseHeader } from '@x402/core/http';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import { ExactEvmScheme as EvmSellerScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPayment } from '@x402/fetch';
import { ExactSvmScheme as SvmBuyerScheme } from '@x402/svm/exact/client';
import { ExactSvmScheme as SvmSellerScheme } from '@x402/svm/exact/server';
import express from 'express';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

/**
 * Stock @x402/svm clients accept only mainnet, devnet and testnet ids; gate402 serves its embedded
 * localnet under devnet's id too (X402_LOCALNET_AS_DEVNET, never for a real cluster).
 */
const SOLANA_DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';

interface NetworkInfo {
  id: `${string}:${string}`;
  family: 'solana' | 'evm';
  isLocal: boolean;
  rpcUrl: string | null;
  tokens: { symbol: string; address: string }[];
}

export interface PaidAnswer {
  status: number;
  body: unknown;
  /** The facilitator's settlement, from the PAYMENT-RESPONSE header: success, transaction, payer. */
  settlement: ReturnType<typeof decodePaymentResponseHeader>;
}

export async function runStockX402Example(
  gatewayUrl: string,
  key: string,
): Promise<{ solana: PaidAnswer; evm: PaidAnswer }> {
  // gate402's own API, used only to set the stage: where the local chains and their USDC are, wallets
  // for the seller to be paid into, and test funds from the local faucet.
  const api = async <T>(method: 'GET' | 'POST', path: string, body?: object): Promise<T> => {
    const res = await fetch(`${gatewayUrl}${path}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const { networks } = await api<{ networks: NetworkInfo[] }>('GET', '/networks');
  const solana = networks.find((n) => n.family === 'solana' && n.isLocal);
  const evm = networks.find((n) => n.family === 'evm' && n.isLocal);
  const solanaUsdc = solana?.tokens.find((t) => t.symbol === 'USDC')?.address;
  const evmUsdc = evm?.tokens.find((t) => t.symbol === 'USDC')?.address;
  if (!solana?.rpcUrl || !evm || !solanaUsdc || !evmUsdc)
    throw new Error('start gate402 with its embedded chains');

  const payTo = {
    solana: (await api<{ address: string }>('POST', '/wallets', { chain: 'solana' })).address,
    evm: (await api<{ address: string }>('POST', '/wallets', { chain: 'evm' })).address,
  };
  // x402 `exact` does not create the seller's Solana token account: a first USDC transfer to it does.
  await api('POST', '/faucet', { address: payTo.solana, amount: 0.01, token: 'USDC' });

  // The seller: stock @x402/express, with gate402 as its facilitator (a Bearer key on each call).
  const auth = { Authorization: `Bearer ${key}` };
  const facilitator = new HTTPFacilitatorClient({
    url: `${gatewayUrl}/facilitator`,
    createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: auth }),
  });
  const resourceServer = new x402ResourceServer(facilitator)
    .register(SOLANA_DEVNET, new SvmSellerScheme())
    .register(evm.id, new EvmSellerScheme());
  const app = express();
  app.use(
    paymentMiddleware(
      {
        'GET /solana-report': {
          accepts: {
            scheme: 'exact',
            network: SOLANA_DEVNET,
            payTo: payTo.solana,
            price: { amount: '10000', asset: solanaUsdc }, // 0.01 USDC, in atomic units
          },
          description: 'a report paid in USDC on Solana',
        },
        'GET /evm-report': {
          accepts: {
            scheme: 'exact',
            network: evm.id,
            payTo: payTo.evm,
            // The token's EIP-712 domain, which an EIP-3009 authorization is signed for.
            price: { amount: '20000', asset: evmUsdc, extra: { name: 'USD Coin', version: '2' } },
          },
          description: 'a report paid in USDC on EVM',
        },
      },
      resourceServer,
    ),
  );
  app.get('/solana-report', (_req, res) => void res.json({ report: 'solana' }));
  app.get('/evm-report', (_req, res) => void res.json({ report: 'evm' }));
  const shop = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => shop.once('listening', resolve));
  const shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;

  try {
    // The buyer: fresh keys, 1 USDC each from the local faucet (no SOL or ETH: the facilitator pays fees).
    const solanaBuyer = await generateKeyPairSigner();
    const evmBuyer = privateKeyToAccount(generatePrivateKey());
    await api('POST', '/faucet', { address: solanaBuyer.address, amount: 1, token: 'USDC' });
    await api('POST', '/faucet', { address: evmBuyer.address, amount: 1, token: 'USDC' });

    // Stock @x402/fetch: pays a 402 with the first scheme that fits, then retries the request.
    const client = x402Client.fromConfig({
      schemes: [
        // The localnet is reached under devnet's id, so the client is told its RPC URL.
        { network: SOLANA_DEVNET, client: new SvmBuyerScheme(solanaBuyer, { rpcUrl: solana.rpcUrl }) },
        { network: evm.id, client: new EvmBuyerScheme(evmBuyer) },
      ],
      // @x402/fetch pays only in assets it is told to trust; the local USDC mints are not on its list.
      spendControls: {
        allowedAssets: [
          { network: SOLANA_DEVNET, asset: solanaUsdc },
          { network: evm.id, asset: evmUsdc },
        ],
      },
    });
    const pay = wrapFetchWithPayment(fetch, client);
    const paid = async (path: string): Promise<PaidAnswer> => {
      const res = await pay(`${shopUrl}${path}`);
      const header = res.headers.get('payment-response');
      if (header === null) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return { status: res.status, body: await res.json(), settlement: decodePaymentResponseHeader(header) };
    };
    return { solana: await paid('/solana-report'), evm: await paid('/evm-report') };
  } finally {
    await new Promise((resolve) => shop.close(resolve));
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const key = process.env.GATE402_KEY;
  if (key === undefined) throw new Error('set GATE402_KEY to a Premium key');
  const result = await runStockX402Example(process.env.GATE402_URL ?? 'http://127.0.0.1:8402', key);
  console.log(JSON.stringify(result, null, 2));
}
