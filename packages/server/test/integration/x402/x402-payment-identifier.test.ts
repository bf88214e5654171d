import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { type PaymentPayload, type PaymentRequirements, SettleError } from '@x402/core/types';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import {
  appendPaymentIdentifierToExtensions,
  declarePaymentIdentifierExtension,
  generatePaymentId,
  PAYMENT_IDENTIFIER,
} from '@x402/extensions/payment-identifier';
import { wrapFetchWithPayment } from '@x402/fetch';
import { ExactSvmScheme as SvmBuyerScheme } from '@x402/svm/exact/client';
import { ExactSvmScheme as SvmSellerScheme } from '@x402/svm/exact/server';
import express from 'express';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { DATABASE_URL, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import {
  evmExactRequirements,
  evmPayload,
  svmExactRequirements,
  svmPayload,
} from '../../support/x402-buyer.ts';

/** The payment-identifier extension as a stock client echoes it with `id`. */
function identified(id: string): Record<string, unknown> {
  const extensions: Record<string, unknown> = { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension() };
  appendPaymentIdentifierToExtensions(extensions, id);
  return extensions;
}

/**
 * The x402 `payment-identifier` extension on gate402's facilitator: the same identifier with the same
 * payload answers the first answer (nothing runs twice), with another payload it is refused 409, and
 * identifiers are per account. A stock @x402/fetch buyer with the stock client helper against a stock
 * @x402/express seller, and stock payloads settled directly; on the Solana localnet and anvil; SQLite,
 * or PostgreSQL when DATABASE_URL is set (the identifiers live in the shared idempotency table).
 */
describe('x402 payment-identifier on the built-in facilitator', () => {
  let chain: TestChain;
  let evm: TestEvm;
  let gw: TestGateway;
  let gatewayUrl: string;
  let seller: { key: string; accountId: string; solana: string; evm: string };
  let second: { key: string; accountId: string; solana: string };

  const post = (key: string, url: string, payload: object) =>
    gw.app.inject({ method: 'POST', url, headers: bearer(key), payload });

  /** How many payments the account has received from `sender`. */
  async function paymentsFrom(key: string, wallet: string, sender: string): Promise<number> {
    const history = await callAs(gw, key, 'GET', `/payment/history/${wallet}`);
    return history.body.payments.filter((p: { sender: string }) => p.sender === sender).length;
  }

  /** A funded stock Solana buyer, and what it signs for 0.01 USDC to `payTo` with `extensions`. */
  async function solanaBuyer(payTo: string) {
    const buyer = await generateKeyPairSigner();
    await callAs(gw, seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const requirements = svmExactRequirements(chain, {
      amount: '10000',
      payTo,
      feePayer: gw.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '',
    });
    return {
      address: buyer.address,
      requirements,
      sign: async (extensions: Record<string, unknown>) => ({
        paymentPayload: { ...(await svmPayload(chain, buyer, requirements)), extensions } as PaymentPayload,
        paymentRequirements: requirements as PaymentRequirements,
      }),
    };
  }

  before(async () => {
    [chain, evm] = await Promise.all([startTestChain(), startTestEvm()]);
    const storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter, evm.adapter]), storage });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    gatewayUrl = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    const a = await gw.newCaller('premium');
    seller = {
      ...a,
      solana: (await callAs(gw, a.key, 'POST', '/wallets', { chain: 'solana' })).body.address,
      evm: (await callAs(gw, a.key, 'POST', '/wallets', { chain: 'evm' })).body.address,
    };
    await callAs(gw, a.key, 'POST', '/faucet', { address: seller.solana, amount: 0.01, token: 'USDC' });
    const b = await gw.newCaller('premium');
    second = {
      ...b,
      solana: (await callAs(gw, b.key, 'POST', '/wallets', { chain: 'solana' })).body.address,
    };
    await callAs(gw, b.key, 'POST', '/faucet', { address: second.solana, amount: 0.01, token: 'USDC' });
  });

  after(async () => {
    await gw?.close();
    await Promise.all([chain?.close(), evm?.close()]);
    evm?.dispose();
  });

  it('a stock buyer with the identifier helper pays a stock seller once; the seller settling the same payload again is answered the first settlement', async () => {
    const headers = { Authorization: `Bearer ${seller.key}` };
    const facilitator = new HTTPFacilitatorClient({
      url: `${gatewayUrl}/facilitator`,
      createAuthHeaders: async () => ({ verify: headers, settle: headers, supported: headers }),
    });
    const server = new x402ResourceServer(facilitator).register(SOLANA_DEVNET_ID, new SvmSellerScheme());
    const app = express();
    app.use(
      paymentMiddleware(
        {
          'GET /order': {
            accepts: { scheme: 'exact', network: SOLANA_DEVNET_ID, payTo: seller.solana, price: '$0.01' },
            extensions: { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(true) },
          },
        },
        server,
      ),
    );
    app.get('/order', (_req, res) => void res.json({ ordered: true }));
    const listening = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => listening.once('listening', resolve));
    try {
      const shop = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
      const buyer = await generateKeyPairSigner();
      await callAs(gw, seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
      const id = generatePaymentId();
      let sent: PaymentPayload | undefined;
      const client = x402Client
        .fromConfig({
          schemes: [
            {
              network: SOLANA_DEVNET_ID,
              client: new SvmBuyerScheme(buyer, { rpcUrl: chain.localnet.rpcUrl }),
            },
          ],
        })
        .onBeforePaymentCreation(async ({ paymentRequired }) => {
          if (paymentRequired.extensions) appendPaymentIdentifierToExtensions(paymentRequired.extensions, id);
        })
        .onAfterPaymentCreation(async ({ paymentPayload }) => {
          sent = paymentPayload;
        });
      const res = await wrapFetchWithPayment(fetch, client)(`${shop}/order`);
      assert.equal(res.status, 200, await res.clone().text());
      assert.ok(sent !== undefined);
      const echoed = sent.extensions?.[PAYMENT_IDENTIFIER] as { info: { id: string } } | undefined;
      assert.equal(echoed?.info.id, id);
      const first = await facilitator.settle(sent, sent.accepted);
      // The seller's own settle of it came first: only that one was a success; this names its transaction.
      assert.equal(first.success, false, JSON.stringify(first));
      assert.equal(first.errorReason, 'duplicate_settlement');
      const again = await post(seller.key, '/facilitator/settle', {
        paymentPayload: sent,
        paymentRequirements: sent.accepted,
      });
      assert.equal(again.statusCode, 200);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.json().success, false);
      assert.equal(again.json().errorReason, 'duplicate_settlement');
      assert.equal(again.json().transaction, first.transaction);
      const verified = await post(seller.key, '/facilitator/verify', {
        paymentPayload: sent,
        paymentRequirements: sent.accepted,
      });
      // A kept "valid" is never replayed: the payload is settled now (review-29).
      assert.equal(verified.json().isValid, false);
      assert.equal(verified.json().invalidReason, 'duplicate_settlement');
      assert.equal(await paymentsFrom(seller.key, seller.solana, buyer.address), 1);
    } finally {
      await new Promise((resolve) => listening.close(() => resolve(undefined)));
    }
  });

  it('the same identifier with another payload is refused 409 PAYMENT_IDENTIFIER_REUSED, and nothing is sent', async () => {
    const buyer = await solanaBuyer(seller.solana);
    const id = generatePaymentId();
    const first = await buyer.sign(identified(id));
    const settled = await post(seller.key, '/facilitator/settle', first);
    assert.equal(settled.json().success, true, settled.body);
    // A second payment signed by the same buyer (another transaction), under the same identifier.
    const other = await buyer.sign(identified(id));
    assert.notDeepEqual(other.paymentPayload.payload, first.paymentPayload.payload);
    const refused = await post(seller.key, '/facilitator/settle', other);
    assert.equal(refused.statusCode, 409, refused.body);
    assert.equal(refused.json().error.code, 'PAYMENT_IDENTIFIER_REUSED');
    assert.equal(refused.json().success, false);
    assert.equal(refused.json().errorReason, 'payment_identifier_conflict');
    assert.equal(refused.json().transaction, '');
    // A stock facilitator client reads the refusal as a SettleError with the reason.
    const headers = { Authorization: `Bearer ${seller.key}` };
    const stock = new HTTPFacilitatorClient({
      url: `${gatewayUrl}/facilitator`,
      createAuthHeaders: async () => ({ verify: headers, settle: headers, supported: headers }),
    });
    await assert.rejects(stock.settle(other.paymentPayload, other.paymentRequirements), (error: unknown) => {
      assert.ok(error instanceof SettleError);
      assert.equal(error.errorReason, 'payment_identifier_conflict');
      return true;
    });
    // The same id and payload against other requirements is another request too.
    const verify = await post(seller.key, '/facilitator/verify', {
      ...first,
      paymentRequirements: { ...first.paymentRequirements, maxTimeoutSeconds: 61 },
    });
    assert.equal(verify.statusCode, 200, 'verify keeps its own answer under the id');
    const verifyOther = await post(seller.key, '/facilitator/verify', other);
    assert.equal(verifyOther.statusCode, 409);
    assert.equal(verifyOther.json().isValid, false);
    assert.equal(verifyOther.json().invalidReason, 'payment_identifier_conflict');
    // Only the first payment moved money.
    assert.equal(await paymentsFrom(seller.key, seller.solana, buyer.address), 1);
  });

  it("two accounts' identifiers never meet: the same id settles each account's own payment", async () => {
    const id = generatePaymentId();
    const forA = await (await solanaBuyer(seller.solana)).sign(identified(id));
    const forB = await (await solanaBuyer(second.solana)).sign(identified(id));
    const a = await post(seller.key, '/facilitator/settle', forA);
    const b = await post(second.key, '/facilitator/settle', forB);
    assert.equal(a.json().success, true, a.body);
    assert.equal(b.json().success, true, b.body);
    assert.notEqual(a.json().transaction, b.json().transaction);
    assert.equal(b.headers['idempotent-replayed'], undefined);
    // B presenting A's payload under the same id is not A's answer: the payment is A's settlement.
    const taken = await post(second.key, '/facilitator/settle', forA);
    assert.equal(taken.statusCode, 409, 'B used the id with its own payload first');
    const fresh = generatePaymentId();
    const replayByB = await post(second.key, '/facilitator/settle', {
      ...forA,
      paymentPayload: { ...forA.paymentPayload, extensions: identified(fresh) },
    });
    assert.equal(replayByB.json().success, false);
    assert.equal(replayByB.json().errorReason, 'duplicate_settlement');
  });

  it('two settles of one payload with one identifier at once: one settlement, one success, the other names it', async () => {
    const request = await (await solanaBuyer(seller.solana)).sign(identified(generatePaymentId()));
    const [x, y] = await Promise.all([
      post(seller.key, '/facilitator/settle', request),
      post(seller.key, '/facilitator/settle', request),
    ]);
    assert.equal([x, y].filter((r) => r.json().success === true).length, 1, `${x.body} ${y.body}`);
    assert.equal([x, y].find((r) => r.json().success !== true)?.json().errorReason, 'duplicate_settlement');
    assert.equal(x.json().transaction, y.json().transaction);
    assert.equal([x, y].filter((r) => r.headers['idempotent-replayed'] === 'true').length, 1);
  });

  it('refuses an identifier of the wrong shape, or none where the seller requires one, before anything is sent', async () => {
    const buyer = await solanaBuyer(seller.solana);
    const short = await buyer.sign({
      [PAYMENT_IDENTIFIER]: {
        ...declarePaymentIdentifierExtension(),
        info: { required: false, id: 'short' },
      },
    });
    const res = await post(seller.key, '/facilitator/settle', short);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().success, false);
    assert.equal(res.json().errorReason, 'invalid_payload');
    assert.match(res.json().errorMessage, /payment-identifier\.info\.id/);
    const required = await buyer.sign({ [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(true) });
    const missing = await post(seller.key, '/facilitator/verify', required);
    assert.equal(missing.json().isValid, false);
    assert.equal(missing.json().invalidReason, 'invalid_payload');
    assert.match(missing.json().invalidMessage, /requires a payment identifier/);
    const garbage = await post(seller.key, '/facilitator/settle', {
      ...short,
      paymentPayload: { ...short.paymentPayload, extensions: { [PAYMENT_IDENTIFIER]: 'x' } },
    });
    assert.equal(garbage.json().errorReason, 'invalid_payload');
    assert.equal(await paymentsFrom(seller.key, seller.solana, buyer.address), 0);
  });

  it('EVM: the same identifier and payload answers the first settlement; another payload is refused', async () => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    await callAs(gw, seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const requirements = evmExactRequirements(evm, { amount: '10000', payTo: seller.evm });
    const id = generatePaymentId();
    const payload = { ...(await evmPayload(buyer, requirements)), extensions: identified(id) };
    const first = await post(seller.key, '/facilitator/settle', {
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    assert.equal(first.json().success, true, first.body);
    const again = await post(seller.key, '/facilitator/settle', {
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    assert.equal(again.json().transaction, first.json().transaction);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const other = { ...(await evmPayload(buyer, requirements)), extensions: identified(id) };
    const refused = await post(seller.key, '/facilitator/settle', {
      paymentPayload: other,
      paymentRequirements: requirements,
    });
    assert.equal(refused.statusCode, 409);
    assert.equal(refused.json().errorReason, 'payment_identifier_conflict');
    assert.equal(await paymentsFrom(seller.key, seller.evm, buyer.address), 1);
  });
});

describe('x402 payment-identifier across two gateway instances on one database', () => {
  let chain: TestChain;
  let first: TestGateway;
  let second: TestGateway;

  before(async () => {
    chain = await startTestChain();
    // PostgreSQL when DATABASE_URL is set (instances behind a load balancer); else one SQLite file.
    const storage = DATABASE_URL === undefined ? tempSqlite() : await tempPostgres();
    const shared = {
      storage,
      masterKey: new Uint8Array(randomBytes(32)),
      networks: new NetworkRegistry([chain.adapter]),
    };
    first = await startTestGateway({ ...shared, disposeStorage: false });
    second = await startTestGateway(shared);
    await first.services.facilitator.start();
    await second.services.facilitator.start();
  });
  after(async () => {
    await first?.close();
    await second?.close();
    await chain?.close();
  });

  it('one identifier settled at both at once is one settlement, answered alike; another payload under it is refused at either', async () => {
    const seller = await first.newCaller('premium');
    const payTo = (await callAs(first, seller.key, 'POST', '/wallets', { chain: 'solana' })).body.address;
    await callAs(first, seller.key, 'POST', '/faucet', { address: payTo, amount: 0.01, token: 'USDC' });
    const buyer = await generateKeyPairSigner();
    await callAs(first, seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const feePayer = first.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '';
    assert.equal(second.services.facilitator.feePayerOf(SOLANA_DEVNET_ID), feePayer, 'one fee payer');
    const requirements = svmExactRequirements(chain, { amount: '10000', payTo, feePayer });
    const id = generatePaymentId();
    const request = {
      paymentPayload: { ...(await svmPayload(chain, buyer, requirements)), extensions: identified(id) },
      paymentRequirements: requirements,
    };
    const settle = (gw: TestGateway, body: object) =>
      gw.app.inject({
        method: 'POST',
        url: '/facilitator/settle',
        headers: bearer(seller.key),
        payload: body,
      });
    const [x, y] = await Promise.all([settle(first, request), settle(second, request)]);
    assert.equal([x, y].filter((r) => r.json().success === true).length, 1, `${x.body} ${y.body}`);
    assert.equal(x.json().transaction, y.json().transaction);
    assert.equal([x, y].filter((r) => r.headers['idempotent-replayed'] === 'true').length, 1);
    const other = {
      paymentPayload: { ...(await svmPayload(chain, buyer, requirements)), extensions: identified(id) },
      paymentRequirements: requirements,
    };
    for (const gw of [first, second]) assert.equal((await settle(gw, other)).statusCode, 409);
    const history = await callAs(first, seller.key, 'GET', `/payment/history/${payTo}`);
    assert.equal(
      history.body.payments.filter((p: { sender: string }) => p.sender === buyer.address).length,
      1,
    );
  });
});
