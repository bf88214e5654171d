import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Gate402Client, PaymentDeclinedError, payingFetch, paymentResponseOf } from '@gate402/client';
import { serve } from '@hono/node-server';
import { ExactEvmScheme as EvmSellerScheme } from '@x402/evm/exact/server';
import {
  x402ResourceServer as HonoResourceServer,
  paymentMiddleware as honoPaymentMiddleware,
} from '@x402/hono';
import { ExactSvmScheme as SvmSellerScheme } from '@x402/svm/exact/server';
import { Hono } from 'hono';
import { createPublicClient, http } from 'viem';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { X402PayService } from '../../../src/services/payments/x402/x402-pay.ts';
import { SpendGuard } from '../../../src/services/spending/spend-guard.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { handReconciler, untilNotPending } from '../../support/hand-reconciler.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { gatewayFacilitator, startShop, type TestShop } from '../../support/x402-shop.ts';

/**
 * POST /payment/x402: a custodial wallet pays stock x402 sellers (`@x402/express`, `@x402/hono`) whose
 * facilitator is gate402's built-in one, on the embedded chains. The gateway signs with the stock client
 * scheme, records the payment pending, and the reconciler confirms it from the chain; and every refusal
 * comes before anything is signed or recorded.
 */
describe('POST /payment/x402: custodial wallets pay stock x402 sellers', () => {
  let chain: TestChain;
  let evm: TestEvm;
  let gw: TestGateway;
  let gatewayUrl: string;
  let seller: { key: string; solana: string; evm: string };
  let buyer: { key: string; accountId: string; solana: string; evm: string };
  let shop: TestShop;
  let honoUrl: string;
  let closeHono: () => Promise<void>;
  const usdcSolana = () => chain.localnet.usdcMint.address;

  const api = (key: string, method: 'GET' | 'POST', url: string, payload?: object) =>
    callAs(gw, key, method, url, payload);

  /** The seller's 402 for `url`: its PAYMENT-REQUIRED header and its body. */
  const challenge = async (url: string) => {
    const res = await fetch(url);
    assert.equal(res.status, 402);
    const header = res.headers.get('payment-required');
    assert.ok(header, 'a v2 seller sends PAYMENT-REQUIRED');
    return { header, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
  };
  const decoded = (header: string) => JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  const encoded = (json: unknown) => Buffer.from(JSON.stringify(json)).toString('base64');

  const pay = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    gw.app
      .inject({
        method: 'POST',
        url: '/payment/x402',
        headers: { authorization: `Bearer ${buyer.key}`, ...headers },
        payload: body,
      })
      .then((res) => ({ status: res.statusCode, body: res.json() }));

  const sentPayments = async (wallet: string) =>
    (await api(buyer.key, 'GET', `/payment/history/${wallet}?type=sent`)).body.total as number;

  before(async () => {
    [chain, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    // SQLite, or PostgreSQL when DATABASE_URL is set (the spend caps' locking differs between them).
    const storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter, evm.adapter]), storage });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    gatewayUrl = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;

    const sellerCaller = await gw.newCaller('premium');
    const buyerCaller = await gw.newCaller('standard');
    const wallet = async (key: string, family: string) =>
      (await api(key, 'POST', '/wallets', { chain: family })).body.address as string;
    seller = {
      key: sellerCaller.key,
      solana: await wallet(sellerCaller.key, 'solana'),
      evm: await wallet(sellerCaller.key, 'evm'),
    };
    buyer = {
      ...buyerCaller,
      solana: await wallet(buyerCaller.key, 'solana'),
      evm: await wallet(buyerCaller.key, 'evm'),
    };
    // x402 `exact` does not create the seller's token account: a first USDC mint does.
    await api(seller.key, 'POST', '/faucet', { address: seller.solana, amount: 0.01, token: 'USDC' });
    for (const address of [buyer.solana, buyer.evm]) {
      const funded = await api(buyer.key, 'POST', '/faucet', { address, amount: 1, token: 'USDC' });
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
    }

    const evmNetwork = evm.adapter.info.id as `eip155:${string}`;
    shop = await startShop({
      gatewayUrl,
      key: seller.key,
      schemes: [
        [SOLANA_DEVNET_ID, new SvmSellerScheme()],
        [evmNetwork, new EvmSellerScheme()],
      ],
      routes: {
        '/solana-report': {
          accepts: {
            scheme: 'exact',
            network: SOLANA_DEVNET_ID,
            payTo: seller.solana,
            price: { amount: '10000', asset: usdcSolana() },
          },
          body: { report: 'solana' },
        },
        '/evm-report': {
          accepts: {
            scheme: 'exact',
            network: evmNetwork,
            payTo: seller.evm,
            price: { amount: '20000', asset: evm.usdc.address, extra: { name: 'USD Coin', version: '2' } },
          },
          body: { report: 'evm' },
        },
      },
    });

    // The same seller with stock @x402/hono.
    const honoServer = new HonoResourceServer(gatewayFacilitator(gatewayUrl, seller.key));
    honoServer.register(SOLANA_DEVNET_ID, new SvmSellerScheme());
    honoServer.register(evmNetwork, new EvmSellerScheme());
    const app = new Hono();
    app.use(
      honoPaymentMiddleware(
        {
          'GET /hono-report': {
            accepts: {
              scheme: 'exact',
              network: evmNetwork,
              payTo: seller.evm,
              price: { amount: '30000', asset: evm.usdc.address, extra: { name: 'USD Coin', version: '2' } },
            },
          },
        },
        honoServer,
      ),
    );
    app.get('/hono-report', (c) => c.json({ report: 'hono' }));
    await new Promise<void>((resolve) => {
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
        honoUrl = `http://127.0.0.1:${info.port}`;
        resolve();
      });
      closeHono = () => new Promise((done) => server.close(() => done()));
    });
  });

  after(async () => {
    await closeHono?.();
    await shop?.close();
    await gw?.close();
    await Promise.all([chain?.close(), evm?.close()]);
    evm?.dispose();
  });

  for (const [family, path, atomic] of [
    ['solana', '/solana-report', 10_000n],
    ['evm', '/evm-report', 20_000n],
  ] as const) {
    it(`${family}: pays a stock @x402/express seller; the chain confirms it, in status, history and events`, async () => {
      const url = `${shop.url}${path}`;
      const wallet = buyer[family];
      const { header } = await challenge(url);
      const paid = await pay({
        walletAddress: wallet,
        paymentRequired: header,
        resource: url,
        maxAmount: { USDC: 0.05 },
      });
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal(paid.body.status, 'pending');
      assert.equal(paid.body.paymentHeaderName, 'PAYMENT-SIGNATURE');
      assert.equal(paid.body.x402Version, 2);
      assert.equal(paid.body.amount, Number(atomic) / 1e6);
      assert.equal(paid.body.asset.symbol, 'USDC');
      assert.equal(paid.body.sender, wallet);
      const payload = decoded(paid.body.paymentHeader);
      assert.equal(payload.accepted.payTo, seller[family]);
      assert.equal(payload.accepted.amount, atomic.toString());

      const answer = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': paid.body.paymentHeader } });
      assert.equal(answer.status, 200, await answer.clone().text());
      assert.deepEqual(await answer.json(), { report: family });
      const settled = decoded(answer.headers.get('payment-response') ?? '');
      assert.equal(settled.success, true);

      // The seller's PAYMENT-RESPONSE prompts a look at the chain now, which confirms it.
      const checked = await api(buyer.key, 'POST', `/payment/x402/${paid.body.paymentId}/check`);
      assert.equal(checked.status, 200, JSON.stringify(checked.body));
      assert.equal(checked.body.status, 'confirmed');
      assert.equal(checked.body.signature, settled.transaction);
      // Another account cannot look at it.
      const other = await api(seller.key, 'POST', `/payment/x402/${paid.body.paymentId}/check`);
      assert.equal(other.status, 404);
      const status = () => api(buyer.key, 'GET', `/payment/status/${paid.body.paymentId}`);
      const final = await untilNotPending(handReconciler(gw, `watch-${family}`), status, 30);
      assert.equal(final.status, 'confirmed');
      assert.equal((final as unknown as { signature: string }).signature, settled.transaction);
      const history = await api(buyer.key, 'GET', `/payment/history/${wallet}?type=sent`);
      const entry = history.body.payments.find(
        (p: { paymentId: string }) => p.paymentId === paid.body.paymentId,
      );
      assert.equal(entry.status, 'confirmed');
      assert.equal(entry.recipient, seller[family]);
      const events = await gw.store.events.listAfter(buyer.accountId, 0, 1000);
      const types = events.filter((e) => e.paymentId === paid.body.paymentId).map((e) => e.type);
      assert.deepEqual(types, ['payment.sent', 'payment.confirmed']);
    });
  }

  it('pays a stock @x402/hono seller (EVM) the same way', async () => {
    const url = `${honoUrl}/hono-report`;
    const { header } = await challenge(url);
    const paid = await pay({
      walletAddress: buyer.evm,
      paymentRequired: header,
      resource: url,
      maxAmount: { USDC: 1 },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const answer = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': paid.body.paymentHeader } });
    assert.equal(answer.status, 200, await answer.clone().text());
    assert.deepEqual(await answer.json(), { report: 'hono' });
    const status = () => api(buyer.key, 'GET', `/payment/status/${paid.body.paymentId}`);
    assert.equal((await untilNotPending(handReconciler(gw, 'watch-hono'), status, 30)).status, 'confirmed');
  });

  it('pays an x402 v1 challenge (the 402 body) with an X-PAYMENT the facilitator verifies', async () => {
    const feePayer = gw.services.facilitator.feePayerOf(SOLANA_DEVNET_ID);
    const requirement = {
      scheme: 'exact',
      network: 'solana-devnet',
      maxAmountRequired: '10000',
      resource: `${shop.url}/v1-report`,
      description: 'a v1 report',
      mimeType: 'application/json',
      payTo: seller.solana,
      maxTimeoutSeconds: 60,
      asset: usdcSolana(),
      extra: { feePayer },
    };
    const paid = await pay({
      walletAddress: buyer.solana,
      paymentRequiredBody: { x402Version: 1, error: 'X-PAYMENT header is required', accepts: [requirement] },
      resource: `${shop.url}/v1-report`,
      maxAmount: { USDC: 0.01 },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.x402Version, 1);
    assert.equal(paid.body.paymentHeaderName, 'X-PAYMENT');
    const payload = decoded(paid.body.paymentHeader);
    assert.equal(payload.x402Version, 1);
    assert.equal(payload.network, 'solana-devnet');
    const verified = await api(seller.key, 'POST', '/facilitator/verify', {
      x402Version: 1,
      paymentPayload: payload,
      paymentRequirements: requirement,
    });
    assert.equal(verified.status, 200);
    assert.equal(verified.body.isValid, true, JSON.stringify(verified.body));
    assert.equal(verified.body.payer, buyer.solana);
  });

  it('refuses one atomic unit above the buyer maxAmount, naming it; nothing signed or recorded', async () => {
    const url = `${shop.url}/solana-report`;
    const { header } = await challenge(url);
    const before = await sentPayments(buyer.solana);
    const refused = await pay({
      walletAddress: buyer.solana,
      paymentRequired: header,
      resource: url,
      maxAmount: { USDC: 0.009999 },
    });
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'PAYMENT_OPTION_REFUSED');
    assert.match(
      refused.body.error.details['paymentRequired.accepts[0]'],
      /asks 0\.01 USDC, more than maxAmount 0\.009999 USDC/,
    );
    // Exactly the price is within the limit.
    const exact = await pay({
      walletAddress: buyer.solana,
      paymentRequired: header,
      resource: url,
      maxAmount: { usdc: 0.01 },
    });
    assert.equal(exact.status, 200, JSON.stringify(exact.body));
    assert.equal(await sentPayments(buyer.solana), before + 1);
  });

  it('refuses a token the seller names that the network does not list, a network not configured, a long validity, another scheme', async () => {
    const url = `${shop.url}/solana-report`;
    const { header } = await challenge(url);
    const required = decoded(header);
    const option = required.accepts[0];
    const variants = [
      [{ ...option, asset: 'So11111111111111111111111111111111111111112' }, /is not a token listed/],
      [{ ...option, network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' }, /is not configured here/],
      [{ ...option, network: 'eip155:8453' }, /is not configured here/],
      [{ ...option, maxTimeoutSeconds: 86_400 * 365 }, /maxTimeoutSeconds 31536000 is longer than the 600 s/],
      [{ ...option, scheme: 'upto' }, /scheme "upto" is not paid/],
      [{ ...option, extra: {} }, /extra\.feePayer/],
    ] as const;
    const before = await sentPayments(buyer.solana);
    for (const [changed, reason] of variants) {
      const refused = await pay({
        walletAddress: buyer.solana,
        paymentRequired: encoded({ ...required, accepts: [changed] }),
        resource: url,
        maxAmount: { USDC: 1, So11111111111111111111111111111111111111112: 1 },
      });
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.match(refused.body.error.details['paymentRequired.accepts[0]'], reason);
    }
    // A network the buyer does not allow.
    const notAllowed = await pay({
      walletAddress: buyer.solana,
      paymentRequired: header,
      resource: url,
      maxAmount: { USDC: 1 },
      networks: ['eip155:31337'],
    });
    assert.equal(notAllowed.status, 422);
    assert.match(notAllowed.body.error.details['paymentRequired.accepts[0]'], /not in networks/);
    assert.equal(await sentPayments(buyer.solana), before);
  });

  it('picks the option it may pay when the first is refused', async () => {
    const url = `${shop.url}/solana-report`;
    const { header } = await challenge(url);
    const required = decoded(header);
    const option = required.accepts[0];
    const paid = await pay({
      walletAddress: buyer.solana,
      paymentRequired: encoded({ ...required, accepts: [{ ...option, amount: '999999999' }, option] }),
      resource: url,
      maxAmount: { USDC: 0.5 },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(decoded(paid.body.paymentHeader).accepted.amount, '10000');
  });

  it('refuses a PaymentRequired whose body and header name different payTo, asset or network (400, the field)', async () => {
    const url = `${shop.url}/solana-report`;
    const { header } = await challenge(url);
    const required = decoded(header);
    const option = required.accepts[0];
    for (const changed of [
      { payTo: buyer.solana },
      { asset: evm.usdc.address },
      { network: 'eip155:31337' },
    ]) {
      const refused = await pay({
        walletAddress: buyer.solana,
        paymentRequired: header,
        paymentRequiredBody: { ...required, accepts: [{ ...option, ...changed }] },
        resource: url,
        maxAmount: { USDC: 1 },
      });
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, 'INVALID_PARAMETERS');
      assert.ok(refused.body.error.details.paymentRequiredBody);
    }
    // The same terms in both are fine.
    const same = await pay({
      walletAddress: buyer.solana,
      paymentRequired: header,
      paymentRequiredBody: required,
      resource: url,
      maxAmount: { USDC: 1 },
    });
    assert.equal(same.status, 200, JSON.stringify(same.body));
  });

  it('refuses a resource URL on another host than the PaymentRequired names', async () => {
    const url = `${shop.url}/solana-report`;
    const { header } = await challenge(url);
    const refused = await pay({
      walletAddress: buyer.solana,
      paymentRequired: header,
      resource: 'https://elsewhere.example/solana-report',
      maxAmount: { USDC: 1 },
    });
    assert.equal(refused.status, 400);
    assert.match(refused.body.error.details.resource, /elsewhere\.example.*127\.0\.0\.1/);
  });

  it('answers 400 naming the field for what is not a PaymentRequired', async () => {
    const url = `${shop.url}/solana-report`;
    const required = decoded((await challenge(url)).header);
    const option = required.accepts[0];
    const cases: [Record<string, unknown>, string][] = [
      [{ paymentRequired: 'not base64!' }, 'paymentRequired'],
      [{ paymentRequired: encoded({ x402Version: 3, accepts: [option] }) }, 'paymentRequired.x402Version'],
      [{ paymentRequired: encoded({ ...required, accepts: [] }) }, 'paymentRequired.accepts'],
      [
        { paymentRequired: encoded({ ...required, accepts: [{ ...option, amount: '1e6' }] }) },
        'paymentRequired.accepts[0].amount',
      ],
      [
        { paymentRequired: encoded({ ...required, accepts: [{ ...option, payTo: 7 }] }) },
        'paymentRequired.accepts[0].payTo',
      ],
      [{ paymentRequired: encoded({ ...required, resource: {} }) }, 'paymentRequired.resource.url'],
      [
        { paymentRequiredBody: { x402Version: 1, accepts: [{ ...option, maxAmountRequired: '10' }] } },
        'paymentRequiredBody.accepts[0].resource',
      ],
      [{}, 'paymentRequired'],
    ];
    for (const [fields, field] of cases) {
      const refused = await pay({
        walletAddress: buyer.solana,
        resource: url,
        maxAmount: { USDC: 1 },
        ...fields,
      });
      assert.equal(refused.status, 400, `${field}: ${JSON.stringify(refused.body)}`);
      assert.ok(
        field in refused.body.error.details,
        `${field} in ${JSON.stringify(refused.body.error.details)}`,
      );
    }
  });

  it('with the same Idempotency-Key answers the same payment (one signature); without, two payments', async () => {
    const url = `${shop.url}/solana-report`;
    const { header } = await challenge(url);
    const body = {
      walletAddress: buyer.solana,
      paymentRequired: header,
      resource: url,
      maxAmount: { USDC: 1 },
    };
    const before = await sentPayments(buyer.solana);
    const first = await pay(body, { 'idempotency-key': 'x402-once' });
    const again = await pay(body, { 'idempotency-key': 'x402-once' });
    assert.equal(first.status, 200);
    assert.deepEqual(again.body, first.body);
    assert.equal(await sentPayments(buyer.solana), before + 1);
    const one = await pay(body);
    const two = await pay(body);
    assert.notEqual(one.body.paymentId, two.body.paymentId);
    assert.notEqual(one.body.paymentHeader, two.body.paymentHeader);
    assert.equal(await sentPayments(buyer.solana), before + 3);
  });

  it('refuses a wallet of another account (403) and a watch-only or foreign one before anything', async () => {
    const url = `${shop.url}/solana-report`;
    const { header } = await challenge(url);
    const refused = await pay({
      walletAddress: seller.solana,
      paymentRequired: header,
      resource: url,
      maxAmount: { USDC: 1 },
    });
    assert.equal(refused.status, 403);
  });

  /** A fresh buyer account with a Solana wallet holding 1 USDC, and its caller key. */
  const freshBuyer = async () => {
    const caller = await gw.newCaller('standard');
    const wallet = (await api(caller.key, 'POST', '/wallets', { chain: 'solana' })).body.address as string;
    await api(caller.key, 'POST', '/faucet', { address: wallet, amount: 1, token: 'USDC' });
    return { ...caller, wallet };
  };
  const usdcLimit = (caps: { maxPerPayment?: bigint; maxPerDay?: bigint }) => ({
    network: chain.adapter.info.id,
    asset: usdcSolana(),
    symbol: 'USDC',
    decimals: 6,
    maxPerPayment: caps.maxPerPayment ?? null,
    maxPerDay: caps.maxPerDay ?? null,
  });
  const putPolicy = (accountId: string, fields: Record<string, unknown>) =>
    gw.store.spending.putPolicy({
      accountId,
      keyId: null,
      limits: null,
      allowedRecipients: null,
      allowedHosts: null,
      allowedNetworks: null,
      expiresAt: null,
      createdAt: Date.now(),
      updatedAt: Date.now(),
      ...fields,
    });
  const payAs = (key: string, body: Record<string, unknown>) =>
    gw.app
      .inject({
        method: 'POST',
        url: '/payment/x402',
        headers: { authorization: `Bearer ${key}` },
        payload: body,
      })
      .then((res) => ({ status: res.statusCode, body: res.json() }));

  it('refuses a payment above the account spend policy (403 SPEND_LIMIT_EXCEEDED) before signing; nothing recorded', async () => {
    const url = `${shop.url}/solana-report`;
    const { header } = await challenge(url);
    const spender = await freshBuyer();
    await putPolicy(spender.accountId, { limits: [usdcLimit({ maxPerPayment: 9_999n })] });
    const body = {
      walletAddress: spender.wallet,
      paymentRequired: header,
      resource: url,
      maxAmount: { USDC: 1 },
    };
    const refused = await payAs(spender.key, body);
    assert.equal(refused.status, 403, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'SPEND_LIMIT_EXCEEDED');
    assert.equal(refused.body.error.details.limit, 'maxPerPayment');
    const history = await api(spender.key, 'GET', `/payment/history/${spender.wallet}`);
    assert.equal(history.body.total, 0);
    // Allowed hosts: the resource's host must be listed.
    await putPolicy(spender.accountId, {
      allowedHosts: ['shop.example'],
      allowedRecipients: [seller.solana],
    });
    const host = await payAs(spender.key, body);
    assert.equal(host.status, 403);
    assert.equal(host.body.error.code, 'SPEND_NOT_ALLOWED');
    assert.equal(host.body.error.details.limit, 'allowedHosts');
    // The caller brings the PaymentRequired: allowedHosts alone does not show who the host is paid through,
    // so the same policy must list the payee too (review-28-allowed-hosts.test.ts).
    const limit = [usdcLimit({ maxPerPayment: 10_000n })];
    await putPolicy(spender.accountId, { limits: limit, allowedHosts: ['127.0.0.1'] });
    const unbound = await payAs(spender.key, body);
    assert.equal(unbound.status, 403, JSON.stringify(unbound.body));
    assert.deepEqual(unbound.body.error.details, { limit: 'allowedHosts', policy: 'account' });
    await putPolicy(spender.accountId, {
      limits: limit,
      allowedHosts: ['127.0.0.1'],
      allowedRecipients: [seller.solana],
    });
    // A challenge written to pay someone else, naming the allowed host, is refused by the payee list.
    const forged = decoded(header);
    forged.accepts = forged.accepts.map((o: Record<string, unknown>) => ({ ...o, payTo: buyer.solana }));
    const other = await payAs(spender.key, { ...body, paymentRequired: encoded(forged) });
    assert.equal(other.status, 403, JSON.stringify(other.body));
    assert.deepEqual(other.body.error.details, { limit: 'allowedRecipients', policy: 'account' });
    assert.equal((await payAs(spender.key, body)).status, 200);
    assert.equal((await api(spender.key, 'GET', `/payment/history/${spender.wallet}`)).body.total, 1);
  });

  it('a burst of concurrent payments at a daily cap: exactly the cap is paid; an expired payment gives its share back', async () => {
    const url = `${shop.url}/solana-report`;
    const { header } = await challenge(url);
    const spender = await freshBuyer();
    await putPolicy(spender.accountId, { limits: [usdcLimit({ maxPerDay: 30_000n })] });
    const body = {
      walletAddress: spender.wallet,
      paymentRequired: header,
      resource: url,
      maxAmount: { USDC: 1 },
    };
    const answers = await Promise.all(Array.from({ length: 8 }, () => payAs(spender.key, body)));
    const paid = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 403);
    assert.equal(paid.length, 3, JSON.stringify(answers.map((a) => a.status)));
    assert.equal(refused.length, 5);
    for (const r of refused) assert.equal(r.body.error.code, 'SPEND_LIMIT_EXCEEDED');
    const history = await api(spender.key, 'GET', `/payment/history/${spender.wallet}`);
    assert.equal(history.body.total, 3);
    // Nobody settles them: once expired they stop counting, and the day has room again.
    const reconciler = handReconciler(gw, 'watch-cap');
    const status = () => api(spender.key, 'GET', `/payment/status/${paid[0]?.body.paymentId}`);
    assert.equal((await untilNotPending(reconciler, status, 100)).status, 'expired');
    for (const p of paid.slice(1)) {
      const s = () => api(spender.key, 'GET', `/payment/status/${p.body.paymentId}`);
      assert.equal((await untilNotPending(reconciler, s, 100)).status, 'expired');
    }
    assert.equal((await payAs(spender.key, body)).status, 200);
  });

  it('payingFetch with maxTokenAmounts: a buyer holding only an API key pays stock sellers on both chains', async () => {
    const gateway = new Gate402Client({ url: gatewayUrl, apiKey: buyer.key });
    const payments: string[] = [];
    for (const [wallet, url, report] of [
      [buyer.solana, `${shop.url}/solana-report`, 'solana'],
      [buyer.evm, `${honoUrl}/hono-report`, 'hono'],
    ] as const) {
      const pay = payingFetch({
        gateway,
        wallet,
        maxAmount: '0.001',
        maxTokenAmounts: { USDC: '0.05' },
        onTokenPayment: (payment) => payments.push(payment.paymentId),
      });
      const answer = await pay(url);
      assert.equal(answer.status, 200, await answer.clone().text());
      assert.deepEqual(await answer.json(), { report });
      assert.equal(paymentResponseOf(answer)?.success, true);
    }
    assert.equal(payments.length, 2);
    const reconciler = handReconciler(gw, 'watch-fetch');
    for (const id of payments) {
      const status = () => api(buyer.key, 'GET', `/payment/status/${id}`);
      assert.equal((await untilNotPending(reconciler, status, 30)).status, 'confirmed');
    }
    // Above the token limit: declined, nothing paid; without maxTokenAmounts the 402 is returned as before.
    const dear = payingFetch({
      gateway,
      wallet: buyer.solana,
      maxAmount: 1,
      maxTokenAmounts: { USDC: 0.001 },
    });
    await assert.rejects(dear(`${shop.url}/solana-report`), (error: unknown) => {
      assert.ok(error instanceof PaymentDeclinedError);
      assert.match(error.message, /more than maxAmount 0\.001 USDC/);
      return true;
    });
    const nativeOnly = payingFetch({ gateway, wallet: buyer.solana, maxAmount: 1 });
    assert.equal((await nativeOnly(`${shop.url}/solana-report`)).status, 402);
  });

  // Second to last: it mines EVM blocks past validBefore, moving that chain's clock ahead.
  it('EVM: a payment the seller never settles expires once the chain finalizes a block at its validBefore, not before', async () => {
    const url = `${shop.url}/evm-report`;
    const required = decoded((await challenge(url)).header);
    const shortLived = { ...required, accepts: [{ ...required.accepts[0], maxTimeoutSeconds: 2 }] };
    const paid = await pay({
      walletAddress: buyer.evm,
      paymentRequired: encoded(shortLived),
      resource: url,
      maxAmount: { USDC: 1 },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const validBefore = Number(decoded(paid.body.paymentHeader).payload.authorization.validBefore) * 1000;
    assert.equal(paid.body.expiresAt, validBefore);
    // The gateway's own watcher, without the clock margin a real chain needs.
    const s = gw.services;
    const watcher = new X402PayService({
      store: gw.store,
      wallets: s.wallets,
      networks: gw.networks,
      facilitator: s.facilitator,
      ledger: s.ledger,
      spending: new SpendGuard({ store: gw.store }),
      clockMarginMs: 0,
    });
    const record = async () => {
      const found = await gw.store.payments.get(paid.body.paymentId);
      assert.ok(found);
      return found;
    };
    await watcher.watch(await record(), evm.adapter);
    assert.equal((await record()).status, 'pending');
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, validBefore - Date.now() + 50)));
    // Past validBefore by the clock, but the chain's finalized block is stamped before it: the chain could
    // still take the authorization, so it is not judged yet.
    await watcher.watch(await record(), evm.adapter);
    assert.equal((await record()).status, 'pending');
    // anvil's finalized block is 64 behind the latest: 70 blocks 1 s apart stamp it past validBefore.
    const node = createPublicClient({ transport: http(evm.anvil.rpcUrl) });
    await node.request({ method: 'anvil_mine' as never, params: ['0x46', '0x1'] as never });
    const finalized = await node.getBlock({ blockTag: 'finalized' });
    assert.ok(finalized.timestamp * 1000n >= BigInt(validBefore), `finalized at ${finalized.timestamp}`);
    await watcher.watch(await record(), evm.adapter);
    assert.equal((await record()).status, 'expired');
    const late = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': paid.body.paymentHeader } });
    assert.equal(late.status, 402);
  });

  it('expires a payment the seller never settles once its blockhash passes, and events say so', async () => {
    const url = `${shop.url}/solana-report`;
    const { header } = await challenge(url);
    const paid = await pay({
      walletAddress: buyer.solana,
      paymentRequired: header,
      resource: url,
      maxAmount: { USDC: 1 },
    });
    assert.equal(paid.status, 200);
    const reconciler = handReconciler(gw, 'watch-expiry');
    await reconciler.runOnce();
    const status = () => api(buyer.key, 'GET', `/payment/status/${paid.body.paymentId}`);
    assert.equal((await status()).body.status, 'pending');
    // 150 blocks at the test chain's 20 ms slots.
    const final = await untilNotPending(reconciler, status, 100);
    assert.equal(final.status, 'expired');
    const events = await gw.store.events.listAfter(buyer.accountId, 0, 10_000);
    const types = events.filter((e) => e.paymentId === paid.body.paymentId).map((e) => e.type);
    assert.deepEqual(types, ['payment.sent', 'payment.expired']);
    // The header the seller never used is refused by it now.
    const late = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': paid.body.paymentHeader } });
    assert.equal(late.status, 402);
  });
});
