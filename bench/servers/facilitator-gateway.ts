// gate402 as `npm start` runs it (SQLite, embedded localnet), with an Enterprise account and one x402
// `exact` Solana payload made by a stock @x402/svm buyer for the gateway's fee payer. Prints PORT, KEY,
// BODY (the /verify request, base64 JSON), RPC_URL and FEE_PAYER_SECRET (hex, so the reference
// facilitator co-signs as the same fee payer and both verify identical payloads), and for settlements,
// which each need a payload of their own, BUYER_SECRET (hex, the funded buyer's 64-byte key) and
// REQUIREMENTS (base64 JSON), then serves until killed.

import { webcrypto } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKeyPairSignerFromBytes } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import type { PaymentRequirements } from '@x402/core/types';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { loadConfig } from '../../packages/server/src/config.ts';
import { startServer } from '../../packages/server/src/server.ts';
import { loadMasterKey } from '../../packages/server/src/services/custody/master-key.ts';
import { SecretBox } from '../../packages/server/src/services/custody/secret-box.ts';
import { FeePayerKeys } from '../../packages/server/src/services/facilitator/fee-payer-keys.ts';
import { SOLANA_DEVNET_ID } from '../../packages/server/src/x402/network-names.ts';

const config = loadConfig({
  DATA_DIR: mkdtempSync(join(tmpdir(), 'gate402-bench-')),
  PORT: '0',
  LOCALNET_PORT: '0',
  ANVIL_PORT: '0',
  LOG_LEVEL: 'warn',
  GATE402_DEMO: 'false',
  // The settle benchmark pays more network fees in a run than the default daily budget of an account.
  X402_FEE_BUDGET: '{"solana":"100"}',
});
const server = await startServer(config);
const { services, store } = server;
const account = await services.accounts.createAccount({
  name: 'bench',
  plan: 'enterprise',
  rateLimit: 1_000_000,
});
const { key } = await services.accounts.createKey(account.id, 'bench');
const seller = await services.wallets.create(account.id, { chain: 'solana' });
const chain = server.networks.all().find((c) => c.info.family === 'solana');
const usdc = chain?.info.tokens[0];
if (chain?.faucet === undefined || usdc === undefined) throw new Error('no local Solana faucet');
// Extractable, so the benchmark can sign more payloads with the same funded buyer.
const buyerKeys = (await webcrypto.subtle.generateKey({ name: 'Ed25519' }, true, [
  'sign',
  'verify',
])) as webcrypto.CryptoKeyPair;
const buyerSecret = Buffer.concat([
  Buffer.from((await webcrypto.subtle.exportKey('pkcs8', buyerKeys.privateKey)).slice(-32)),
  Buffer.from(await webcrypto.subtle.exportKey('raw', buyerKeys.publicKey)),
]);
const buyer = await createKeyPairSignerFromBytes(buyerSecret);
await chain.faucet.fundToken(usdc.symbol, seller.address, 1n);
await chain.faucet.fundToken(usdc.symbol, buyer.address, 1_000_000_000n);

const feePayer = await new FeePayerKeys(store, new SecretBox(loadMasterKey(config, () => {}))).ensure(
  'solana',
  () => {
    throw new Error('the gateway created its fee payer at start');
  },
);
const requirements: PaymentRequirements = {
  scheme: 'exact',
  network: SOLANA_DEVNET_ID as PaymentRequirements['network'],
  asset: usdc.address,
  amount: '10000',
  payTo: seller.address,
  maxTimeoutSeconds: 60,
  extra: { feePayer: feePayer.address },
};
const client = x402Client.fromConfig({
  schemes: [{ network: SOLANA_DEVNET_ID, client: new ExactSvmScheme(buyer, { rpcUrl: chain.info.rpcUrl }) }],
  spendControls: false,
});
const paymentPayload = await client.createPaymentPayload({
  x402Version: 2,
  resource: { url: 'https://bench.example/report' },
  accepts: [requirements],
});
const body = { x402Version: 2, paymentPayload, paymentRequirements: requirements };

process.stdout.write(
  [
    `PORT ${new URL(server.url).port}`,
    `KEY ${key}`,
    `BODY ${Buffer.from(JSON.stringify(body)).toString('base64')}`,
    `RPC_URL ${chain.info.rpcUrl}`,
    `FEE_PAYER_SECRET ${Buffer.from(feePayer.secretKey).toString('hex')}`,
    `BUYER_SECRET ${buyerSecret.toString('hex')}`,
    `REQUIREMENTS ${Buffer.from(JSON.stringify(requirements)).toString('base64')}`,
    '',
  ].join('\n'),
);
