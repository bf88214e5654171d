import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http';
import { ExactEvmScheme as EvmBuyerScheme } from '@x402/evm/exact/client';
import { ExactEvmScheme as EvmSellerScheme } from '@x402/evm/exact/server';
import { wrapFetchWithPayment } from '@x402/fetch';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import {
  type FacilitatorHookName,
  type FacilitatorHooks,
  loadConfig,
  type RunningServer,
  startServer,
} from '../../../src/index.ts';
import { createLogger } from '../../../src/server.ts';
import { startShop, type TestShop } from '../../support/x402-shop.ts';

const ANVIL = 'eip155:31337';
/** 0.02 USDC, every route's price. */
const PRICE = 20_000n;
const FUNDED = 1_000_000n;

/**
 * The built-in facilitator's lifecycle hooks, given through the programmatic server API
 * (`startServer(config, logger, { facilitatorHooks })`), seen from a stock @x402/express seller and a
 * stock @x402/fetch buyer on the embedded anvil: their order and context, an operator's veto that sends
 * nothing, and a failing hook that is logged while the payment stands.
 */
describe('facilitator hooks through the programmatic server API', () => {
  let server: RunningServer;
  let dataDir: string;
  let sellerKey: string;
  let sellerAccount: string;
  let usdc: string;
  let shop: TestShop;
  let payTo: string;
  const logLines: string[] = [];
  /** What the hooks below do, set by each test. */
  const policy: {
    calls: string[];
    contexts: Record<string, Record<string, unknown>>;
    blockPayer?: string;
    afterSettleThrows?: boolean;
    beforeVerifyThrows?: boolean;
  } = { calls: [], contexts: {} };

  const hooks: FacilitatorHooks = {
    onBeforeVerify: (context) => {
      policy.calls.push('onBeforeVerify');
      policy.contexts.onBeforeVerify = { ...context };
      if (policy.beforeVerifyThrows) throw new Error('the sanctions list is unreachable');
      return undefined;
    },
    onAfterVerify: (context) => {
      policy.calls.push('onAfterVerify');
      policy.contexts.onAfterVerify = { ...context };
    },
    onVerifyFailure: (context) => {
      policy.calls.push('onVerifyFailure');
      policy.contexts.onVerifyFailure = { ...context };
      return undefined;
    },
    onBeforeSettle: (context) => {
      policy.calls.push('onBeforeSettle');
      policy.contexts.onBeforeSettle = { ...context };
      const payload = (context.paymentPayload.payload ?? {}) as { authorization?: { from?: string } };
      if (payload.authorization?.from === policy.blockPayer) {
        return { abort: true, reason: 'payer_sanctioned', message: 'this payer may not be settled here' };
      }
      return undefined;
    },
    onAfterSettle: (context) => {
      policy.calls.push('onAfterSettle');
      policy.contexts.onAfterSettle = { ...context };
      if (policy.afterSettleThrows) throw new Error('the ledger export is down');
    },
    onSettleFailure: (context) => {
      policy.calls.push('onSettleFailure');
      policy.contexts.onSettleFailure = { ...context };
      return undefined;
    },
  };

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'gate402-facilitator-hooks-'));
    const config = loadConfig({
      PORT: '0',
      LOCALNET_PORT: '0',
      ANVIL_PORT: '0',
      LOCALNET_SLOT_MS: '20',
      DATA_DIR: dataDir,
      GATE402_DEMO: 'false',
      LOG_LEVEL: 'warn',
    });
    const stream = new Writable({
      write(chunk, _encoding, done) {
        logLines.push(...String(chunk).trim().split('\n'));
        done();
      },
    });
    server = await startServer(config, createLogger(config, stream), { facilitatorHooks: hooks });
    const account = await server.services.accounts.createAccount({ name: 'seller', plan: 'premium' });
    sellerAccount = account.id;
    sellerKey = (await server.services.accounts.createKey(account.id, 'test')).key;
    const { networks } = (await api('GET', '/networks')) as {
      networks: { id: string; tokens: { symbol: string; address: string }[] }[];
    };
    usdc = networks.find((n) => n.id === ANVIL)?.tokens.find((t) => t.symbol === 'USDC')?.address ?? '';
    payTo = ((await api('POST', '/wallets', { chain: 'evm' })) as { address: string }).address;
    shop = await startShop({
      gatewayUrl: server.url,
      key: sellerKey,
      schemes: [[ANVIL, new EvmSellerScheme()]],
      routes: {
        '/report': {
          accepts: {
            scheme: 'exact',
            network: ANVIL,
            payTo,
            price: { amount: String(PRICE), asset: usdc, extra: { name: 'USD Coin', version: '2' } },
          },
          body: { report: 'paid' },
        },
      },
    });
  });
  after(async () => {
    await shop?.close();
    await server?.close();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  async function api(method: 'GET' | 'POST', path: string, body?: object): Promise<unknown> {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${sellerKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
    return res.json();
  }

  async function buyer() {
    const account = privateKeyToAccount(generatePrivateKey());
    await api('POST', '/faucet', { address: account.address, amount: 1, token: 'USDC' });
    const stock = x402Client.fromConfig({
      schemes: [{ network: ANVIL, client: new EvmBuyerScheme(account) }],
      spendControls: { allowedAssets: [{ network: ANVIL, asset: usdc }] },
    });
    return { address: account.address, pay: wrapFetchWithPayment(fetch, stock) };
  }

  async function usdcOf(address: string): Promise<bigint> {
    const portfolio = (await api('GET', `/portfolio/${address}`)) as {
      tokens: { mint: string; amount: string }[];
    };
    const token = portfolio.tokens.find((t) => t.mint.toLowerCase() === usdc.toLowerCase());
    return BigInt(token?.amount ?? '0');
  }

  async function settledFor(payer: string): Promise<number> {
    const { payments } = (await api('GET', `/payment/history/${payTo}?type=received&limit=100`)) as {
      payments: { sender: string }[];
    };
    return payments.filter((p) => p.sender.toLowerCase() === payer.toLowerCase()).length;
  }

  function reset(): void {
    policy.calls = [];
    policy.contexts = {};
    delete policy.blockPayer;
    policy.afterSettleThrows = false;
    policy.beforeVerifyThrows = false;
  }

  function hookFailures(): [FacilitatorHookName | undefined, string | undefined][] {
    return logLines
      .map(
        (line) =>
          JSON.parse(line) as { msg?: string; hook?: FacilitatorHookName; err?: { message?: string } },
      )
      .filter((entry) => entry.msg === 'a facilitator hook failed')
      .map((entry) => [entry.hook, entry.err?.message]);
  }

  it('calls the hooks in order, with the payment, the requirements, the asking account and the results', async () => {
    reset();
    const { address, pay } = await buyer();
    const res = await pay(`${shop.url}/report`);
    assert.equal(res.status, 200, await res.clone().text());
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.deepEqual(policy.calls, ['onBeforeVerify', 'onAfterVerify', 'onBeforeSettle', 'onAfterSettle']);
    const verify = policy.contexts.onBeforeVerify as {
      via: string;
      requirements: Record<string, unknown>;
      paymentPayload: Record<string, unknown>;
    };
    assert.equal(verify.via, 'facilitator');
    assert.deepEqual(
      [verify.requirements.scheme, verify.requirements.network, verify.requirements.amount],
      ['exact', ANVIL, String(PRICE)],
    );
    assert.equal(verify.paymentPayload.x402Version, 2);
    assert.deepEqual(policy.contexts.onAfterVerify?.result, { isValid: true, payer: address });
    assert.equal(policy.contexts.onBeforeSettle?.accountId, sellerAccount);
    const settled = policy.contexts.onAfterSettle?.result as Record<string, unknown>;
    assert.deepEqual(
      [settled.success, settled.transaction, settled.payer],
      [true, settlement.transaction, address],
    );
    assert.equal(await usdcOf(address), FUNDED - PRICE);
  });

  it("an operator's veto before settling: the stock seller answers 402, nothing is sent, the buyer keeps its USDC", async () => {
    reset();
    const { address, pay } = await buyer();
    policy.blockPayer = address;
    const res = await pay(`${shop.url}/report`);
    assert.equal(res.status, 402);
    assert.deepEqual(policy.calls, ['onBeforeVerify', 'onAfterVerify', 'onBeforeSettle']);
    // A settle that fails is answered 402 with the failed settlement in PAYMENT-RESPONSE.
    const answer = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.deepEqual(
      [answer.success, answer.errorReason, answer.transaction],
      [false, 'payer_sanctioned', ''],
    );
    // The settle answers after the transaction is mined: had it been sent, the balance would show it.
    assert.equal(await usdcOf(address), FUNDED);
    assert.equal(await settledFor(address), 0);
  });

  it('an onAfterSettle hook that throws is logged; the payment stands, recorded, and the buyer is served', async () => {
    reset();
    policy.afterSettleThrows = true;
    const { address, pay } = await buyer();
    const res = await pay(`${shop.url}/report`);
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { report: 'paid' });
    assert.equal(await usdcOf(address), FUNDED - PRICE);
    assert.equal(await settledFor(address), 1);
    assert.deepEqual(hookFailures(), [['onAfterSettle', 'the ledger export is down']]);
  });

  it('a before-verify hook that throws: unexpected_verify_error, logged, nothing settled', async () => {
    reset();
    policy.beforeVerifyThrows = true;
    const { address, pay } = await buyer();
    const res = await pay(`${shop.url}/report`);
    assert.equal(res.status, 402);
    const refusal = decodePaymentRequiredHeader(res.headers.get('payment-required') ?? '');
    assert.match(refusal.error ?? '', /unexpected_verify_error/);
    assert.doesNotMatch(refusal.error ?? '', /sanctions/, "the hook's own message is not told to the seller");
    assert.deepEqual(policy.calls, ['onBeforeVerify']);
    assert.deepEqual(hookFailures().at(-1), ['onBeforeVerify', 'the sanctions list is unreachable']);
    assert.equal(await usdcOf(address), FUNDED);
    assert.equal(await settledFor(address), 0);
  });

  it('runs the settle hooks for an x402 payload given to POST /payment/receive too, naming the account', async () => {
    reset();
    const account = privateKeyToAccount(generatePrivateKey());
    await api('POST', '/faucet', { address: account.address, amount: 1, token: 'USDC' });
    const unpaid = await fetch(`${shop.url}/report`);
    const required = decodePaymentRequiredHeader(unpaid.headers.get('payment-required') ?? '');
    const stock = new x402HTTPClient(
      x402Client.fromConfig({
        schemes: [{ network: ANVIL, client: new EvmBuyerScheme(account) }],
        spendControls: { allowedAssets: [{ network: ANVIL, asset: usdc }] },
      }),
    );
    const payload = await stock.createPaymentPayload(required);
    const received = (await api('POST', '/payment/receive', {
      walletAddress: payTo,
      paymentProof: encodePaymentSignatureHeader(payload),
      expectedAmount: Number(PRICE) / 1e6,
      asset: 'USDC',
    })) as { sender: string; signature: string };
    assert.equal(received.sender.toLowerCase(), account.address.toLowerCase());
    // POST /payment/receive settles at once (the settle verifies first, as x402's settle does): no verify hooks.
    assert.deepEqual(policy.calls, ['onBeforeSettle', 'onAfterSettle']);
    const settle = policy.contexts.onBeforeSettle as {
      via: string;
      accountId: string;
      requirements: Record<string, unknown>;
    };
    assert.deepEqual(
      [settle.via, settle.accountId, settle.requirements.amount, settle.requirements.payTo],
      ['receive', sellerAccount, String(PRICE), payTo],
    );
    assert.equal(
      (policy.contexts.onAfterSettle?.result as { transaction?: string } | undefined)?.transaction,
      received.signature,
    );
    assert.equal(await usdcOf(account.address), FUNDED - PRICE);
  });
});
