import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { generateKeyPairSigner } from '@solana/kit';
import { x402Client } from '@x402/core/client';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { generatePaymentId, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import { wrapFetchWithPayment } from '@x402/fetch';
import { ExactSvmScheme as SvmBuyerScheme } from '@x402/svm/exact/client';
import { ExactSvmScheme as SvmSellerScheme } from '@x402/svm/exact/server';
import express from 'express';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { SOLANA_DEVNET_ID } from '../../../src/x402/network-names.ts';
import { callAs } from '../../support/api-caller.ts';
import { tempSqlite } from '../../support/databases.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';
import { recordingFetch, svmExactRequirements, svmPayload } from '../../support/x402-buyer.ts';

/**
 * Review of #29 (adversarial): the payment-identifier extension as a hostile BUYER uses it. The
 * identifier is in the payment payload, which the buyer writes: the seller need not have declared it.
 */
describe('review-29: payment-identifier as a hostile buyer', () => {
  let chain: TestChain;
  let gw: TestGateway;
  let gatewayUrl: string;
  let seller: { key: string; solana: string };

  before(async () => {
    chain = await startTestChain();
    gw = await startTestGateway({ networks: new NetworkRegistry([chain.adapter]), storage: tempSqlite() });
    await gw.services.facilitator.start();
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    gatewayUrl = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    const a = await gw.newCaller('premium');
    seller = {
      key: a.key,
      solana: (await callAs(gw, a.key, 'POST', '/wallets', { chain: 'solana' })).body.address,
    };
    await callAs(gw, a.key, 'POST', '/faucet', { address: seller.solana, amount: 0.01, token: 'USDC' });
  });

  after(async () => {
    await gw?.close();
    await chain?.close();
  });

  it('a buyer who pays a stock seller once cannot be served again by resending the same PAYMENT-SIGNATURE with an identifier of its own', async () => {
    const headers = { Authorization: `Bearer ${seller.key}` };
    const facilitator = new HTTPFacilitatorClient({
      url: `${gatewayUrl}/facilitator`,
      createAuthHeaders: async () => ({ verify: headers, settle: headers, supported: headers }),
    });
    const server = new x402ResourceServer(facilitator).register(SOLANA_DEVNET_ID, new SvmSellerScheme());
    const app = express();
    let served = 0;
    // A plain stock seller: no payment-identifier declared.
    app.use(
      paymentMiddleware(
        {
          'GET /order': {
            accepts: { scheme: 'exact', network: SOLANA_DEVNET_ID, payTo: seller.solana, price: '$0.01' },
          },
        },
        server,
      ),
    );
    app.get('/order', (_req, res) => {
      served += 1;
      res.json({ ordered: served });
    });
    const listening = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => listening.once('listening', resolve));
    try {
      const shop = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
      const buyer = await generateKeyPairSigner();
      await callAs(gw, seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
      const id = generatePaymentId();
      const client = x402Client
        .fromConfig({
          schemes: [
            {
              network: SOLANA_DEVNET_ID,
              client: new SvmBuyerScheme(buyer, { rpcUrl: chain.localnet.rpcUrl }),
            },
          ],
        })
        .onAfterPaymentCreation(async ({ paymentPayload }) => {
          // The buyer's own addition: the seller never asked for an identifier.
          paymentPayload.extensions = {
            ...paymentPayload.extensions,
            [PAYMENT_IDENTIFIER]: { info: { id } },
          };
        });
      const recording = recordingFetch();
      const first = await wrapFetchWithPayment(recording.fetch, client)(`${shop}/order`);
      assert.equal(first.status, 200, await first.clone().text());
      const header = recording.sent.at(-1);
      assert.ok(header !== undefined);
      assert.equal(served, 1);
      // The same header again, as a replaying buyer sends it.
      const replay = await fetch(`${shop}/order`, { headers: { 'PAYMENT-SIGNATURE': header } });
      assert.equal(replay.status, 402, `one payment was served twice (served ${served} times)`);
      assert.equal(served, 1);
    } finally {
      await new Promise((resolve) => listening.close(() => resolve(undefined)));
    }
  });

  it('two requests resending one payload with an identifier at once: verified alike, then only one settle is a success', async () => {
    const buyer = await generateKeyPairSigner();
    await callAs(gw, seller.key, 'POST', '/faucet', { address: buyer.address, amount: 1, token: 'USDC' });
    const paymentRequirements = svmExactRequirements(chain, {
      amount: '10000',
      payTo: seller.solana,
      feePayer: gw.services.facilitator.feePayerOf(SOLANA_DEVNET_ID) ?? '',
    });
    const paymentPayload = {
      ...(await svmPayload(chain, buyer, paymentRequirements)),
      extensions: { [PAYMENT_IDENTIFIER]: { info: { id: generatePaymentId() } } },
    };
    const body = { x402Version: 2, paymentPayload, paymentRequirements };
    const call = (action: string) =>
      gw.app.inject({
        method: 'POST',
        url: `/facilitator/${action}`,
        headers: bearer(seller.key),
        payload: body,
      });
    // What a stock seller does for each of two requests that arrived together: verify both, then settle.
    const verdicts = [(await call('verify')).json(), (await call('verify')).json()];
    assert.deepEqual(
      verdicts.map((v) => v.isValid),
      [true, true],
    );
    const settled = [(await call('settle')).json(), (await call('settle')).json()];
    assert.equal(settled[0].success, true, JSON.stringify(settled[0]));
    assert.equal(settled[1].success, false, 'the second request is served for the same payment');
    assert.equal(settled[1].errorReason, 'duplicate_settlement');
  });
});
