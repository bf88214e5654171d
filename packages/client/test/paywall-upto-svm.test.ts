import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { Gate402Client } from '../src/gate402-client.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';
import {
  describeUptoPaywall,
  localnetUpto,
  startUptoSeller,
  type UptoAnswer,
  type UptoChain,
  type UptoSeller,
} from './support/upto-paywall.ts';

/**
 * protect() with an `upto` offer on the embedded localnet (under devnet's id, which stock buyers need):
 * a stock @x402/fetch buyer with @x402/svm's upto client signs the open of a payment channel of the
 * maximum; the paywall has the facilitator verify it and send it (the escrow deposit) before the handler
 * runs, and the handler's `payment.settle(amount)` claims what the request cost, the rest back to the
 * buyer in the same transaction. A maximum nobody claims comes back through the gateway's escrow sweep.
 * The assertions are the suite every upto chain runs (support/upto-paywall.ts).
 */
describeUptoPaywall('Solana', localnetUpto);

/** The offer's window here: a deposit must leave at least half of it (the facilitator's check), 10 s. */
const WINDOW_SECONDS = 20;

/**
 * The buyer signs only the channel open: the payload's `expiresAt` is its own unsigned word, and the
 * claim after the handler used to be held to it. A buyer writing one shorter than the offer's window (but
 * long enough for the deposit) had its maximum held, the handler run, and a slow handler's claim refused
 * as expired — served for nothing (review session 18). The paywall's claim may come until
 * `maxTimeoutSeconds` after the deposit, whatever the buyer wrote.
 */
describe('gate402 paywall: upto on Solana, a buyer writing an expiry shorter than the offer', () => {
  let gateway: InProcessGateway;
  let chain: UptoChain;
  let shop: UptoSeller;

  before(async () => {
    gateway = await startGateway();
    const seller = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    chain = await localnetUpto(seller, gateway);
    shop = await startUptoSeller(seller, {
      price: '0.01',
      payTo: chain.payTo,
      maxTimeoutSeconds: WINDOW_SECONDS,
      upto: { asset: chain.usdc, max: '0.05', network: chain.network },
    });
  });
  after(async () => {
    await shop?.close();
    await gateway?.close();
  });

  it('is charged what a handler settling after that expiry (within the offer’s window) states', async () => {
    const buyer = await chain.newBuyer();
    const [buyerBefore, sellerBefore] = [await chain.usdcOf(buyer.address), await chain.usdcOf(chain.payTo)];
    const url = `${shop.url}?used=0.0175&wait=15000`;
    const required = decodePaymentRequiredHeader((await fetch(url)).headers.get('payment-required') ?? '');
    required.accepts = required.accepts.filter((a) => a.scheme === 'upto');
    const signed = await buyer.client.createPaymentPayload(required);
    // 13 s of the offer's 20: enough for the deposit (at least 10 left), not for the 15 s handler.
    const expiresAt = Math.floor(Date.now() / 1000) + 13;
    const hostile = { ...signed, payload: { ...signed.payload, expiresAt } };
    const paid = await fetch(url, {
      headers: { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(hostile) },
    });
    assert.equal(
      paid.headers.get('payment-required'),
      null,
      'the deposit was refused: the machine was too slow',
    );
    assert.equal(paid.status, 200, await paid.clone().text());
    assert.ok(Date.now() / 1000 > expiresAt, 'the handler settled after the buyer’s expiry');
    assert.equal(((await paid.json()) as UptoAnswer).charged, '0.0175');
    assert.equal(await chain.usdcOf(buyer.address), buyerBefore - 17_500n);
    assert.equal(await chain.usdcOf(chain.payTo), sellerBefore + 17_500n);
  });
});
