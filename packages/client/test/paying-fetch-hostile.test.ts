import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { decodePaymentRequiredHeader, encodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import express from 'express';
import { expressPaywall } from '../src/express.ts';
import { Gate402Client, Gate402TransportError, PaymentDeclinedError, payingFetch } from '../src/index.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';
import { type SellerApp, startSellerApp } from './support/seller-apps.ts';

/**
 * payingFetch against sellers that fail or misbehave, with a real gateway (localnet) paying: a buyer pays
 * at most once for what it asked, and its proof goes nowhere but the seller.
 */
describe('paying fetch against failing and hostile sellers', () => {
  let gateway: InProcessGateway;
  let seller: Gate402Client;
  let buyer: Gate402Client;
  let buyerWallet = '';
  const closers: (() => Promise<unknown>)[] = [];

  before(async () => {
    gateway = await startGateway();
    seller = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey() });
    buyer = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey() });
    buyerWallet = (await buyer.createWallet({ chain: 'solana' })).address;
    await buyer.faucet({ address: buyerWallet, amount: 2 });
  });
  after(async () => {
    for (const close of closers) await close();
    await gateway?.close();
  });

  async function sellerApp(gatewayOfSeller: Gate402Client = seller): Promise<SellerApp> {
    const payTo = (await seller.createWallet({ chain: 'solana' })).address;
    const app = await startSellerApp('express', gatewayOfSeller, { price: '0.01', payTo });
    closers.push(() => app.close());
    return app;
  }

  async function listen(server: Server): Promise<string> {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(
      () =>
        new Promise((resolve) => {
          server.closeAllConnections();
          server.close(resolve);
        }),
    );
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  const paymentsOf = async (wallet: string) => (await buyer.paymentHistory(wallet, { type: 'sent' })).total;

  it('presents the unchecked proof again, instead of paying again, after the seller answered 502', async () => {
    // The seller's gateway becomes unreachable after the challenge was made (its networks are cached).
    let sellerGatewayDown = false;
    const flaky = new Gate402Client({
      url: gateway.url,
      apiKey: await gateway.newApiKey(),
      fetch: async (input, init) => {
        if (sellerGatewayDown) throw new TypeError('fetch failed');
        return fetch(input, init);
      },
    });
    const payTo = (await flaky.createWallet({ chain: 'solana' })).address;
    const app = await startSellerApp('express', flaky, { price: '0.01', payTo });
    closers.push(() => app.close());
    assert.equal((await fetch(app.url)).status, 402);

    const pay = payingFetch({ gateway: buyer, wallet: buyerWallet, maxAmount: '0.05' });
    const before = await paymentsOf(buyerWallet);
    sellerGatewayDown = true;
    const unchecked = await pay(app.url);
    assert.equal(unchecked.status, 502);
    assert.equal(await paymentsOf(buyerWallet), before + 1);

    sellerGatewayDown = false;
    const served = await pay(app.url);
    assert.equal(served.status, 200);
    assert.equal(await paymentsOf(buyerWallet), before + 1, 'the request after a 502 paid a second time');
    // Once served, the proof is spent: the next request pays, once.
    assert.equal((await pay(app.url)).status, 200);
    assert.equal(await paymentsOf(buyerWallet), before + 2);
  });

  it("serves the proof presented again when the seller's receive answer was lost, once", async () => {
    // The seller's gateway takes the proof, and the answer never reaches the paywall.
    let loseNextReceiveAnswer = true;
    const lossy = new Gate402Client({
      url: gateway.url,
      apiKey: await gateway.newApiKey(),
      fetch: async (input, init) => {
        const answer = await fetch(input, init);
        if (loseNextReceiveAnswer && String(input).endsWith('/payment/receive')) {
          loseNextReceiveAnswer = false;
          throw new TypeError('socket hang up');
        }
        return answer;
      },
    });
    const payTo = (await lossy.createWallet({ chain: 'solana' })).address;
    const app = await startSellerApp('express', lossy, { price: '0.01', payTo });
    closers.push(() => app.close());
    let proofHeader = '';
    const recording: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      proofHeader = request.headers.get('payment-signature') ?? proofHeader;
      return fetch(request);
    };
    const pay = payingFetch({ gateway: buyer, wallet: buyerWallet, maxAmount: '0.05', fetch: recording });
    const before = await paymentsOf(buyerWallet);

    assert.equal((await pay(app.url)).status, 502);
    const served = await pay(app.url);
    assert.equal(served.status, 200, await served.clone().text());
    assert.equal(
      await paymentsOf(buyerWallet),
      before + 1,
      'the buyer paid again for a proof the seller took',
    );
    assert.equal((await lossy.paymentHistory(payTo, { type: 'received' })).total, 1);
    // Served once: the same proof again is a replay.
    const replay = await fetch(app.url, { headers: { 'payment-signature': proofHeader } });
    assert.equal(replay.status, 402);
    assert.match(((await replay.json()) as { error: string }).error, /^INVALID_PAYMENT_PROOF: .*already/);
  });

  it('asks again with the same Idempotency-Key after the send answer was lost, and pays once', async () => {
    const app = await sellerApp();
    const key = await gateway.newApiKey();
    let loseNextSendAnswer = true;
    const sendKeys: (string | null)[] = [];
    const lossy = new Gate402Client({
      url: gateway.url,
      apiKey: key,
      fetch: async (input, init) => {
        const answer = await fetch(input, init);
        if (String(input).endsWith('/payment/send')) {
          sendKeys.push(new Headers(init?.headers).get('idempotency-key'));
          if (loseNextSendAnswer) {
            loseNextSendAnswer = false;
            throw new TypeError('socket hang up');
          }
        }
        return answer;
      },
    });
    const wallet = (await lossy.createWallet({ chain: 'solana' })).address;
    await lossy.faucet({ address: wallet, amount: 1 });
    const history = new Gate402Client({ url: gateway.url, apiKey: key });
    const pay = payingFetch({ gateway: lossy, wallet, maxAmount: '0.05' });

    await assert.rejects(pay(app.url), (e: unknown) => e instanceof Gate402TransportError);
    assert.equal((await history.paymentHistory(wallet, { type: 'sent' })).total, 1);
    assert.equal((await pay(app.url)).status, 200);
    assert.equal((await history.paymentHistory(wallet, { type: 'sent' })).total, 1, 'the retry paid twice');
    assert.equal(sendKeys.length, 2);
    assert.equal(sendKeys[1], sendKeys[0]);
  });

  it('presents the proof on the next request when onPayment threw, instead of paying again', async () => {
    const app = await sellerApp();
    let calls = 0;
    const pay = payingFetch({
      gateway: buyer,
      wallet: buyerWallet,
      maxAmount: '0.05',
      onPayment: () => {
        calls += 1;
        if (calls === 1) throw new Error('bookkeeping is down');
      },
    });
    const before = await paymentsOf(buyerWallet);
    await assert.rejects(pay(app.url), /bookkeeping is down/);
    assert.equal(await paymentsOf(buyerWallet), before + 1);
    assert.equal((await pay(app.url)).status, 200);
    assert.equal(await paymentsOf(buyerWallet), before + 1, 'the request after onPayment threw paid again');
    assert.equal(calls, 1);
  });

  it('takes a computed maxAmount with more digits than the currency as the limit it is', async () => {
    const app = await sellerApp();
    // 0.30000000000000004: more decimals than SOL has; 0.01 SOL is well within it.
    const pay = payingFetch({ gateway: buyer, wallet: buyerWallet, maxAmount: 0.1 + 0.2 });
    const before = await paymentsOf(buyerWallet);
    assert.equal((await pay(app.url)).status, 200);
    assert.equal(await paymentsOf(buyerWallet), before + 1);
    const stingy = payingFetch({ gateway: buyer, wallet: buyerWallet, maxAmount: 0.03 / 3 - 1e-12 });
    await assert.rejects(stingy(app.url), (e: unknown) => e instanceof PaymentDeclinedError);
  });

  /** A seller in front of `app` whose 402 lists the options `rewrite` makes of the paywall's; paid requests go through. */
  async function rewritingSeller(
    app: SellerApp,
    rewrite: (accepts: PaymentRequirements[]) => unknown[],
  ): Promise<string> {
    return listen(
      createServer(async (req, res) => {
        const upstream = await fetch(app.url, {
          headers: Object.fromEntries(
            Object.entries(req.headers).filter(
              (e): e is [string, string] => typeof e[1] === 'string' && e[0] !== 'host',
            ),
          ),
        });
        const header = upstream.headers.get('payment-required');
        if (header === null) {
          res.writeHead(upstream.status, { 'content-type': 'application/json' });
          res.end(await upstream.text());
          return;
        }
        const challenge = decodePaymentRequiredHeader(header);
        challenge.accepts = rewrite(challenge.accepts) as PaymentRequirements[];
        res.writeHead(402, { 'payment-required': encodePaymentRequiredHeader(challenge) });
        res.end('{}');
      }),
    );
  }

  it('pays an option within maxAmount when the seller lists a dearer one first', async () => {
    const app = await sellerApp();
    const dearerFirst = await rewritingSeller(app, (accepts) => [
      { ...accepts[0], amount: '1000000000' },
      ...accepts,
    ]);
    const before = await paymentsOf(buyerWallet);
    const pay = payingFetch({ gateway: buyer, wallet: buyerWallet, maxAmount: '0.05' });
    const paid = await pay(`${dearerFirst}/weather`);
    assert.equal(paid.status, 200, await paid.clone().text());
    assert.equal(await paymentsOf(buyerWallet), before + 1);
    // Only dearer options: declined, naming the price.
    const stingy = payingFetch({ gateway: buyer, wallet: buyerWallet, maxAmount: '0.001' });
    await assert.rejects(
      stingy(`${dearerFirst}/weather`),
      (e: unknown) =>
        e instanceof PaymentDeclinedError && /asks 1 SOL, more than maxAmount 0\.001/.test(e.message),
    );
    assert.equal(await paymentsOf(buyerWallet), before + 1);
  });

  it('declines an amount that is no whole number of atomic units, saying so, and pays a good option beside it', async () => {
    const app = await sellerApp();
    const before = await paymentsOf(buyerWallet);
    const pay = payingFetch({ gateway: buyer, wallet: buyerWallet, maxAmount: '1' });
    for (const amount of ['1e7', '-10000000', '0.01', ' 10000000', '1'.repeat(79)]) {
      const odd = await rewritingSeller(app, (accepts) => [{ ...accepts[0], amount }]);
      await assert.rejects(
        pay(`${odd}/weather`),
        (e: unknown) =>
          e instanceof PaymentDeclinedError &&
          e.message.includes(
            `asks an amount of ${JSON.stringify(amount).slice(0, 100)}, which is no whole number`,
          ),
      );
    }
    assert.equal(await paymentsOf(buyerWallet), before);
    const oddFirst = await rewritingSeller(app, (accepts) => [{ ...accepts[0], amount: '1e7' }, ...accepts]);
    assert.equal((await pay(`${oddFirst}/weather`)).status, 200);
    assert.equal(await paymentsOf(buyerWallet), before + 1);
  });

  it('drops the proof on a redirect to another origin, and keeps it on one to the same origin', async () => {
    const app = await sellerApp();
    // Another host: whatever it is sent, it could present to the seller as its own payment.
    const received: IncomingHttpHeaders[] = [];
    const thief = await listen(
      createServer((req, res) => {
        received.push(req.headers);
        res.end('thanks');
      }),
    );
    // A seller that hands out the real paywall's challenge, then sends the paid request elsewhere.
    const hostile = await listen(
      createServer(async (req, res) => {
        if (req.headers['payment-signature'] === undefined) {
          const challenge = await fetch(app.url);
          res.writeHead(402, { 'payment-required': challenge.headers.get('payment-required') ?? '' });
          res.end('{}');
          return;
        }
        res.writeHead(302, { location: `${thief.replace('127.0.0.1', 'localhost')}/elsewhere` });
        res.end();
      }),
    );
    const pay = payingFetch({ gateway: buyer, wallet: buyerWallet, maxAmount: '0.05' });
    const answer = await pay(`${hostile}/weather`);
    assert.equal(await answer.text(), 'thanks');
    assert.equal(received.length, 1);
    assert.equal(received[0]?.['payment-signature'], undefined, 'the proof was sent to another origin');
    assert.equal(received[0]?.['x-payment'], undefined);

    // The paywall itself moved within its own origin: the paid request follows with its proof.
    const payTo = (await seller.createWallet({ chain: 'solana' })).address;
    const moved = express();
    moved.get('/old', (_req, res) => res.redirect(307, '/weather'));
    moved.get('/weather', expressPaywall(seller).protect({ price: '0.01', payTo }), (_req, res) => {
      res.json({ payer: res.locals.payment.payer });
    });
    const base = await listen(createServer(moved));
    const paid = await pay(`${base}/old`);
    assert.equal(paid.status, 200);
    assert.deepEqual(await paid.json(), { payer: buyerWallet });

    // A redirect to another origin before the 402 (http → https, say): the proof goes to the origin that
    // asked for it, once.
    const before = await paymentsOf(buyerWallet);
    const upgrade = await listen(
      createServer((_req, res) => {
        res.writeHead(301, { location: app.url });
        res.end();
      }),
    );
    const moved301 = await pay(`${upgrade.replace('127.0.0.1', 'localhost')}/weather`);
    assert.equal(moved301.status, 200, await moved301.clone().text());
    assert.equal(await paymentsOf(buyerWallet), before + 1);
  });

  it('reads no more than 64 KiB of a 402 body looking for a v1 challenge', async () => {
    let written = 0;
    const endless = await listen(
      createServer((_req, res) => {
        res.writeHead(402, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(1 << 20, 0x20);
        const write = () => {
          while (written < 64 << 20) {
            written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', write);
          }
          res.end('{}');
        };
        write();
      }),
    );
    const pay = payingFetch({ gateway: buyer, wallet: buyerWallet, maxAmount: '0.05' });
    const answer = await pay(endless);
    assert.equal(answer.status, 402);
    await answer.body?.cancel();
    assert.ok(written < 16 << 20, `the buyer read ${written >> 20} MB of a 402 body`);
  });
});
