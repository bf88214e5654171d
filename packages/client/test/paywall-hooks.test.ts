import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner, type KeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { wrapFetchWithPayment } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { Gate402Client } from '../src/gate402-client.ts';
import { paymentResponseOf } from '../src/index.ts';
import type { PaywallHookName, PaywallHooks } from '../src/paywall-hooks.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';
import { type SellerApp, startSellerApp } from './support/seller-apps.ts';

/** Stock Solana clients know only mainnet, devnet and testnet: the localnet is reached as devnet. */
const DEVNET = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
/** 0.01 USDC, the price of every resource here. */
const PRICE = 10_000n;
/** What each buyer is given: 1 USDC. */
const FUNDED = 1_000_000n;

/**
 * protect()'s lifecycle hooks on an Express route, paid `exact` USDC on the embedded localnet by a stock
 * @x402/fetch buyer through the gateway's facilitator: the order and context of each hook, a veto that
 * settles nothing, and hooks that throw before (nothing settled) or after (the payment stands).
 */
describe('gate402 paywall: lifecycle hooks', () => {
  let gateway: InProcessGateway;
  let seller: Gate402Client;
  let funder: Gate402Client;
  let usdc: string;
  let rpcUrl: string;
  let payTo: string;
  const apps: SellerApp[] = [];

  before(async () => {
    gateway = await startGateway();
    seller = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    funder = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    const { networks } = await seller.networks();
    const localnet = networks.find((n) => n.family === 'solana' && n.isDefault);
    usdc = localnet?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    rpcUrl = localnet?.rpcUrl ?? '';
    payTo = (await seller.createWallet({ chain: 'solana' })).address;
    // SOL for the deposit of the token account the paywall opens for payTo when it first prices USDC.
    await seller.faucet({ address: payTo, amount: 0.01 });
  });
  after(async () => {
    for (const app of apps) await app.close();
    await gateway?.close();
  });

  async function sellerApp(hooks: PaywallHooks): Promise<string> {
    const app = await startSellerApp('express', seller, {
      price: '0.01',
      payTo,
      exact: { asset: usdc, amount: '0.01', network: DEVNET },
      hooks,
    });
    apps.push(app);
    return app.url;
  }

  async function buyer(): Promise<{ signer: KeyPairSigner; pay: typeof fetch }> {
    const signer = await generateKeyPairSigner();
    await funder.faucet({ address: signer.address, amount: Number(FUNDED) / 1e6, token: 'USDC' });
    const stock = x402Client.fromConfig({
      schemes: [{ network: DEVNET, client: new ExactSvmScheme(signer, { rpcUrl }) }],
      spendControls: { allowedAssets: [{ network: DEVNET, asset: usdc }] },
    });
    return { signer, pay: wrapFetchWithPayment(fetch, stock) };
  }

  async function usdcOf(address: string): Promise<bigint> {
    const portfolio = await seller.portfolio(address);
    return BigInt(portfolio.tokens.find((t) => t.mint === usdc)?.amount ?? '0');
  }

  /** The payments payTo received from this payer, as the seller's gateway account records them. */
  async function receivedFrom(payer: string): Promise<number> {
    const { payments } = await seller.paymentHistory(payTo, { type: 'received', limit: 100 });
    return payments.filter((p) => p.sender === payer).length;
  }

  it('calls the hooks in order with the payment, the requirement and the results; after-hooks enrich the answer', async () => {
    const calls: string[] = [];
    const seen: Record<string, unknown> = {};
    const url = await sellerApp({
      onBeforeVerify: (context) => {
        calls.push('onBeforeVerify');
        seen.beforeVerify = {
          version: context.x402Version,
          scheme: context.requirements.scheme,
          amount: context.requirements.amount,
          payTo: context.requirements.payTo,
          accepted: (context.paymentPayload.accepted as { asset?: unknown } | undefined)?.asset,
          url: context.transportContext.request.url,
        };
        context.metadata.order = ['before-verify'];
      },
      onAfterVerify: (context) => {
        calls.push('onAfterVerify');
        seen.afterVerify = context.result;
      },
      onVerifyFailure: () => {
        calls.push('onVerifyFailure');
      },
      onBeforeSettle: [
        () => {
          calls.push('onBeforeSettle#1');
        },
        async () => {
          calls.push('onBeforeSettle#2');
        },
      ],
      onAfterSettle: (context) => {
        calls.push('onAfterSettle');
        seen.afterSettle = context.result;
        context.metadata.receipt = `r-${context.result.transaction.slice(0, 8)}`;
        context.setResponseHeader('X-Receipt', `r-${context.result.transaction.slice(0, 8)}`);
        // The paywall's own answer header is not a hook's to change.
        context.setResponseHeader('PAYMENT-RESPONSE', 'forged');
      },
      onSettleFailure: () => {
        calls.push('onSettleFailure');
      },
    });
    const { signer, pay } = await buyer();
    const res = await pay(url);
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(calls, [
      'onBeforeVerify',
      'onAfterVerify',
      'onBeforeSettle#1',
      'onBeforeSettle#2',
      'onAfterSettle',
    ]);
    assert.deepEqual(seen.beforeVerify, {
      version: 2,
      scheme: 'exact',
      amount: String(PRICE),
      payTo,
      accepted: usdc,
      url,
    });
    assert.deepEqual(seen.afterVerify, { isValid: true, payer: signer.address });
    const settled = paymentResponseOf(res);
    assert.ok(settled?.success);
    const afterSettle = seen.afterSettle as { success: boolean; transaction: string; payer: string };
    assert.deepEqual(
      [afterSettle.success, afterSettle.transaction, afterSettle.payer],
      [true, settled.transaction, signer.address],
    );
    const receipt = `r-${settled.transaction.slice(0, 8)}`;
    assert.equal(res.headers.get('x-receipt'), receipt);
    const body = (await res.json()) as { payment: { metadata?: unknown; transaction: string } };
    assert.deepEqual(body.payment.metadata, { order: ['before-verify'], receipt });
    assert.equal(body.payment.transaction, settled.transaction);
    assert.equal(await usdcOf(signer.address), FUNDED - PRICE);
  });

  for (const hook of ['onBeforeVerify', 'onAfterVerify', 'onBeforeSettle'] as const) {
    it(`a veto in ${hook} answers 402 with its reason, settles nothing, and the buyer keeps its money`, async () => {
      const calls: string[] = [];
      const note = (name: string) => () => {
        calls.push(name);
      };
      const hooks: PaywallHooks = {
        onBeforeVerify: note('onBeforeVerify'),
        onAfterVerify: note('onAfterVerify'),
        onBeforeSettle: note('onBeforeSettle'),
        onAfterSettle: note('onAfterSettle'),
        onSettleFailure: note('onSettleFailure'),
        [hook]: () => {
          calls.push(hook);
          return { abort: true, reason: 'payer_blocked', message: 'this payer is on the seller’s list' };
        },
      };
      const url = await sellerApp(hooks);
      const { signer, pay } = await buyer();
      const res = await pay(url);
      assert.equal(res.status, 402);
      const refusal = decodePaymentRequiredHeader(res.headers.get('payment-required') ?? '');
      assert.equal(refusal.error, 'payer_blocked: this payer is on the seller’s list');
      assert.deepEqual(
        calls,
        ['onBeforeVerify', 'onAfterVerify', 'onBeforeSettle'].slice(
          0,
          ['onBeforeVerify', 'onAfterVerify', 'onBeforeSettle'].indexOf(hook) + 1,
        ),
      );
      // The settle answers only once the transaction landed: had it settled, the balance would show it now.
      assert.equal(await usdcOf(signer.address), FUNDED);
      assert.equal(await receivedFrom(signer.address), 0);
    });
  }

  it('a before-hook that throws answers 500 and settles nothing; the error is reported', async () => {
    const reported: [PaywallHookName, string][] = [];
    let settled = false;
    const url = await sellerApp({
      onBeforeSettle: () => {
        throw new Error('the allow-list is unreachable');
      },
      onAfterSettle: () => {
        settled = true;
      },
      onHookError: (name, error) => reported.push([name, (error as Error).message]),
    });
    const { signer, pay } = await buyer();
    const res = await pay(url);
    assert.equal(res.status, 500);
    assert.deepEqual(await res.json(), {
      error: "the paywall's onBeforeSettle hook failed: the allow-list is unreachable",
    });
    assert.deepEqual(reported, [['onBeforeSettle', 'the allow-list is unreachable']]);
    assert.equal(settled, false);
    assert.equal(await usdcOf(signer.address), FUNDED);
    assert.equal(await receivedFrom(signer.address), 0);
  });

  it('an onAfterSettle hook that throws is reported; the payment stands and the buyer is served', async () => {
    const reported: [PaywallHookName, string][] = [];
    const url = await sellerApp({
      onAfterSettle: [
        () => {
          throw new Error('the audit log is down');
        },
        (context) => {
          // Later hooks still run.
          context.setResponseHeader('X-Second-Hook', 'ran');
        },
      ],
      onHookError: (name, error) => reported.push([name, (error as Error).message]),
    });
    const { signer, pay } = await buyer();
    const res = await pay(url);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get('x-second-hook'), 'ran');
    assert.deepEqual(reported, [['onAfterSettle', 'the audit log is down']]);
    assert.equal(await usdcOf(signer.address), FUNDED - PRICE);
    assert.equal(await receivedFrom(signer.address), 1);
  });

  it('native gate402 payments: both before-hooks run before the proof is redeemed; a veto leaves it unredeemed', async () => {
    const buyerClient = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey() });
    const wallet = (await buyerClient.createWallet({ chain: 'solana' })).address;
    await buyerClient.faucet({ address: wallet, amount: 1 });
    const calls: string[] = [];
    let veto = true;
    const app = await startSellerApp('express', seller, {
      price: '0.01',
      payTo,
      hooks: {
        onBeforeVerify: (context) => {
          calls.push(`onBeforeVerify:${context.requirements.scheme}`);
        },
        onBeforeSettle: () => {
          calls.push('onBeforeSettle');
          return veto ? { abort: true, reason: 'closed_for_maintenance' } : undefined;
        },
        onAfterVerify: (context) => {
          calls.push(`onAfterVerify:${context.result.payer === wallet}`);
        },
        onAfterSettle: (context) => {
          calls.push(`onAfterSettle:${context.result.payer === wallet}`);
        },
      },
    });
    apps.push(app);
    const sent = await buyerClient.sendPayment({
      walletAddress: wallet,
      recipientAddress: payTo,
      amount: 0.01,
      resource: app.url,
    });
    const vetoed = await fetch(app.url, { headers: { 'x-payment': sent.paymentProof } });
    assert.equal(vetoed.status, 402);
    assert.equal(((await vetoed.json()) as { error?: string }).error, 'closed_for_maintenance');
    assert.deepEqual(calls, ['onBeforeVerify:gate402-native', 'onBeforeSettle']);
    // The proof was not taken: once the seller lets it through, the same proof is served, once.
    veto = false;
    calls.length = 0;
    const served = await fetch(app.url, { headers: { 'x-payment': sent.paymentProof } });
    assert.equal(served.status, 200, await served.clone().text());
    assert.deepEqual(calls, [
      'onBeforeVerify:gate402-native',
      'onBeforeSettle',
      'onAfterVerify:true',
      'onAfterSettle:true',
    ]);
    const replay = await fetch(app.url, { headers: { 'x-payment': sent.paymentProof } });
    assert.equal(replay.status, 402);
  });

  it('onVerifyFailure sees a refused payment (one atomic unit short) and cannot make it pay', async () => {
    const failures: string[] = [];
    const url = await sellerApp({
      onVerifyFailure: (context) => {
        failures.push(context.error.message);
      },
    });
    // A buyer holding one atomic unit less than the price.
    const signer = await generateKeyPairSigner();
    await funder.faucet({ address: signer.address, amount: Number(PRICE - 1n) / 1e6, token: 'USDC' });
    const stock = x402Client.fromConfig({
      schemes: [{ network: DEVNET, client: new ExactSvmScheme(signer, { rpcUrl }) }],
      spendControls: { allowedAssets: [{ network: DEVNET, asset: usdc }] },
    });
    const res = await wrapFetchWithPayment(fetch, stock)(url);
    assert.equal(res.status, 402);
    assert.equal(failures.length, 1);
    const reason = decodePaymentRequiredHeader(res.headers.get('payment-required') ?? '').error ?? '';
    assert.ok(failures[0]?.startsWith(reason.split(':')[0] ?? '?'), `${failures[0]} / ${reason}`);
    assert.equal(await usdcOf(signer.address), PRICE - 1n);
  });
});
