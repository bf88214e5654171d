import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { Gate402Client } from '../src/index.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';
import { type SellerApp, startSellerApp } from './support/seller-apps.ts';
import { localnetUpto, startUptoSeller } from './support/upto-paywall.ts';

/**
 * `exact` payments (and a Solana `upto` deposit) whose settlement the paywall did not see finish, against
 * a real gateway whose facilitator answers `settlement_pending` at once (PAYMENT_CONFIRM_TIMEOUT_MS=0,
 * slow localnet slots): the buyer who presents its payment again is served, once.
 */
describe('paywall: x402 payments presented again after an unfinished settlement', () => {
  let gateway: InProcessGateway;
  let apiKey = '';
  let seller: Gate402Client;
  const apps: SellerApp[] = [];
  const devnet = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';

  before(async () => {
    gateway = await startGateway({ PAYMENT_CONFIRM_TIMEOUT_MS: '0', LOCALNET_SLOT_MS: '400' });
    apiKey = await gateway.newApiKey('premium');
    seller = new Gate402Client({ url: gateway.url, apiKey });
  });
  after(async () => {
    for (const app of apps) await app.close();
    await gateway?.close();
  });

  /** The header a stock x402 buyer sends for the app's `exact` offer. */
  async function exactHeader(app: SellerApp, client: x402Client): Promise<string> {
    const required: PaymentRequired = decodePaymentRequiredHeader(
      (await fetch(app.url)).headers.get('payment-required') ?? '',
    );
    required.accepts = required.accepts.filter((a) => a.scheme === 'exact');
    return encodePaymentSignatureHeader(await client.createPaymentPayload(required));
  }

  async function present(app: SellerApp, header: string): Promise<{ status: number; reason: string }> {
    const response = await fetch(app.url, { headers: { 'payment-signature': header } });
    const challenge = response.headers.get('payment-required');
    const reason =
      challenge === null ? await response.text() : (decodePaymentRequiredHeader(challenge).error ?? '');
    return { status: response.status, reason };
  }

  it('serves a Solana payment presented again after settlement_pending, once it confirms', async () => {
    const payTo = (await seller.createWallet({ chain: 'solana' })).address;
    await seller.faucet({ address: payTo, amount: 0.01, token: 'USDC' });
    const { networks } = await seller.networks();
    const localnet = networks.find((n) => n.family === 'solana' && n.isDefault);
    const usdc = localnet?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    const app = await startSellerApp('express', seller, {
      price: '0.01',
      payTo,
      exact: { asset: usdc, amount: '0.01', network: devnet },
    });
    apps.push(app);
    const signer = await generateKeyPairSigner();
    await seller.faucet({ address: signer.address, amount: 1, token: 'USDC' });
    const client = x402Client.fromConfig({
      schemes: [{ network: devnet, client: new ExactSvmScheme(signer, { rpcUrl: localnet?.rpcUrl ?? '' }) }],
      spendControls: { allowedAssets: [{ network: devnet, asset: usdc }] },
    });
    const header = await exactHeader(app, client);

    let answer = await present(app, header);
    assert.equal(answer.status, 402);
    assert.match(answer.reason, /^settlement_pending/);
    for (let i = 0; i < 50 && answer.reason.startsWith('settlement_pending'); i++) {
      await sleep(200);
      answer = await present(app, header);
    }
    assert.equal(answer.status, 200, `the buyer who paid was refused: ${answer.reason}`);
    assert.equal((await seller.paymentHistory(payTo, { type: 'received' })).total, 1);
    const replay = await present(app, header);
    assert.equal(replay.status, 402);
    assert.match(replay.reason, /^duplicate_settlement/);
  });

  it("serves an EVM payment presented again after the settle's answer was lost, once", async () => {
    let loseNextSettleAnswer = true;
    const lossy = new Gate402Client({
      url: gateway.url,
      apiKey,
      fetch: async (input, init) => {
        const answer = await fetch(input, init);
        if (loseNextSettleAnswer && String(input).endsWith('/facilitator/settle')) {
          loseNextSettleAnswer = false;
          throw new TypeError('socket hang up');
        }
        return answer;
      },
    });
    const payTo = (await seller.createWallet({ chain: 'evm' })).address;
    const { networks } = await seller.networks();
    const usdc = networks
      .find((n) => n.id === 'eip155:31337')
      ?.tokens.find((t) => t.symbol === 'USDC')?.address;
    assert.ok(usdc);
    const app = await startSellerApp('hono', lossy, {
      price: '0.01',
      payTo,
      exact: { asset: usdc, amount: '0.02', extra: { name: 'USD Coin', version: '2' } },
    });
    apps.push(app);
    const account = privateKeyToAccount(generatePrivateKey());
    await seller.faucet({ address: account.address, amount: 1, token: 'USDC' });
    const client = x402Client.fromConfig({
      schemes: [{ network: 'eip155:31337', client: new ExactEvmScheme(account) }],
      spendControls: { allowedAssets: [{ network: 'eip155:31337', asset: usdc }] },
    });
    const header = await exactHeader(app, client);

    const unanswered = await present(app, header);
    assert.equal(unanswered.status, 502);
    assert.match(unanswered.reason, /facilitator\/settle: socket hang up/);
    const served = await present(app, header);
    assert.equal(served.status, 200, `the buyer who paid was refused: ${served.reason}`);
    assert.equal((await seller.paymentHistory(payTo, { type: 'received' })).total, 1);
    const replay = await present(app, header);
    assert.equal(replay.status, 402);
    assert.match(replay.reason, /^duplicate_settlement/);

    // Another instance of the seller whose verify (not settle) got no answer never settled this payment:
    // presented to it again, the payment served elsewhere is refused, not taken as its own settlement.
    let loseNextVerifyAnswer = true;
    const verifyLost = new Gate402Client({
      url: gateway.url,
      apiKey,
      fetch: async (input, init) => {
        const answer = await fetch(input, init);
        if (loseNextVerifyAnswer && String(input).endsWith('/facilitator/verify')) {
          loseNextVerifyAnswer = false;
          throw new TypeError('socket hang up');
        }
        return answer;
      },
    });
    const other = await startSellerApp('express', verifyLost, {
      price: '0.01',
      payTo,
      exact: { asset: usdc, amount: '0.02', extra: { name: 'USD Coin', version: '2' } },
    });
    apps.push(other);
    assert.equal((await present(other, header)).status, 502);
    const elsewhere = await present(other, header);
    assert.equal(elsewhere.status, 402, 'one payment was served twice');
    assert.match(elsewhere.reason, /^duplicate_settlement/);
  });

  it("serves a Solana upto payment presented again after its deposit's answer was lost, then pending: the buyer pays the settled amount, once", async () => {
    let loseNextSettleAnswer = true;
    const lossy = new Gate402Client({
      url: gateway.url,
      apiKey,
      fetch: async (input, init) => {
        const answer = await fetch(input, init);
        if (loseNextSettleAnswer && String(input).endsWith('/facilitator/settle')) {
          loseNextSettleAnswer = false;
          throw new TypeError('socket hang up');
        }
        return answer;
      },
    });
    const chain = await localnetUpto(seller, gateway);
    const shop = await startUptoSeller(
      lossy,
      { price: '0.01', payTo: chain.payTo, upto: { asset: chain.usdc, max: '0.05', network: chain.network } },
      { patient: true },
    );
    const app = { url: `${shop.url}?used=0.0175`, close: () => shop.close() };
    apps.push(app);
    const buyer = await chain.newBuyer();
    const before = await chain.usdcOf(buyer.address);
    const required: PaymentRequired = decodePaymentRequiredHeader(
      (await fetch(app.url)).headers.get('payment-required') ?? '',
    );
    required.accepts = required.accepts.filter((a) => a.scheme === 'upto');
    const header = encodePaymentSignatureHeader(await buyer.client.createPaymentPayload(required));

    // The deposit was sent, its answer lost: not served, but the paywall settles it again next time.
    const unanswered = await present(app, header);
    assert.equal(unanswered.status, 502);
    assert.match(unanswered.reason, /facilitator\/settle: socket hang up/);
    let answer = await present(app, header);
    for (let i = 0; i < 50 && answer.reason.startsWith('settlement_pending'); i++) {
      await sleep(200);
      answer = await present(app, header);
    }
    assert.equal(answer.status, 200, `the buyer whose maximum is held was refused: ${answer.reason}`);
    assert.deepEqual(shop.settledTwice, [true]);
    assert.equal(await chain.usdcOf(buyer.address), before - 17_500n, 'one deposit, one claim of 0.0175');
    assert.equal((await seller.paymentHistory(chain.payTo, { type: 'received' })).total, 1);
    const replay = await present(app, header);
    assert.equal(replay.status, 402);
    assert.match(replay.reason, /^duplicate_settlement/);
  });
});
