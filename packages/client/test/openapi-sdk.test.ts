import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  Gate402Client,
  Gate402Error,
  Gate402TransportError,
  isGate402Error,
  OPERATIONS,
  toAtomicUnits,
} from '../src/index.ts';
import { type InProcessGateway, startGateway } from './support/gateway.ts';
import { GENERATED_TYPES_PATH, typesFromOpenApi } from './support/openapi-types.ts';

/** The SDK against the document and the endpoints of a real gateway (SQLite, localnet, anvil) over HTTP. */
describe('SDK and the served OpenAPI document', () => {
  let gateway: InProcessGateway;
  let document: { paths: Record<string, Record<string, unknown>> };

  before(async () => {
    gateway = await startGateway({ ALLOW_PRIVATE_OUTBOUND_URLS: 'true' });
    const response = await fetch(new URL('/openapi.json', gateway.url));
    document = (await response.json()) as typeof document;
  });
  after(() => gateway?.close());

  it('has types generated from exactly the document the gateway serves', async () => {
    const committed = readFileSync(GENERATED_TYPES_PATH, 'utf8');
    assert.equal(
      await typesFromOpenApi(document),
      committed,
      'src/generated/openapi-types.ts is stale: run `npm run generate -w packages/client` and add an SDK method for any new operation',
    );
  });

  it('has one SDK method for every operation of the document, and none for an operation it lacks', () => {
    // Each SDK method calls the operation of its operationId, where the document serves it.
    const served = Object.entries(document.paths)
      .flatMap(([path, item]) =>
        Object.entries(item).map(
          ([method, operation]) =>
            `${method.toUpperCase()} ${path} ${(operation as { operationId?: string }).operationId}`,
        ),
      )
      .sort();
    const covered = Object.values(OPERATIONS)
      .map((op) => `${op.method.toUpperCase()} ${op.path} ${op.operationId}`)
      .sort();
    assert.deepEqual(covered, served);
    const client = new Gate402Client({ url: gateway.url });
    for (const name of Object.keys(OPERATIONS)) {
      assert.equal(typeof (client as unknown as Record<string, unknown>)[name], 'function', name);
    }
  });

  it('calls every endpoint with the types of the document', async () => {
    const sdk = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey() });
    assert.deepEqual(await sdk.health(), { status: 'ok' });
    const readiness = await sdk.readiness();
    assert.equal(readiness.status, 'ready');
    const keys = await sdk.proofKeys();
    assert.equal(keys.service, 'gate402');
    assert.equal(keys.proofKeys[0]?.alg, 'Ed25519');
    const account = await sdk.account();
    assert.equal(account.plan, 'standard');
    assert.equal(account.rateLimit.limit, 100);

    const { networks } = await sdk.networks();
    const solana = networks.find((n) => n.family === 'solana' && n.isDefault);
    const evm = networks.find((n) => n.family === 'evm' && n.isDefault);
    assert.ok(solana && evm);
    assert.deepEqual(solana.nativeCurrency, { symbol: 'SOL', decimals: 9 });
    assert.equal(evm.id, 'eip155:31337');
    const usdc = solana.tokens.find((t) => t.symbol === 'USDC');
    assert.ok(usdc);

    const buyer = await sdk.createWallet({ chain: 'solana' });
    const seller = await sdk.createWallet({ chain: 'solana' });
    assert.equal(buyer.chain, 'solana');
    const funded = await sdk.faucet({ address: buyer.address, amount: 2 });
    assert.equal(funded.amount, 2);
    const { wallets } = await sdk.wallets();
    assert.equal(wallets.find((w) => w.address === buyer.address)?.balance, 2);

    const sent = await sdk.sendPayment(
      {
        walletAddress: buyer.address,
        recipientAddress: seller.address,
        amount: 0.25,
        resource: 'https://x.example/a',
      },
      { idempotencyKey: 'sdk-test-send-1' },
    );
    assert.equal(sent.status, 'confirmed');
    assert.match(sent.paymentProof, /^0x[0-9a-f]+$/);
    // The same Idempotency-Key answers the first answer again: no second payment.
    const again = await sdk.sendPayment(
      {
        walletAddress: buyer.address,
        recipientAddress: seller.address,
        amount: 0.25,
        resource: 'https://x.example/a',
      },
      { idempotencyKey: 'sdk-test-send-1' },
    );
    assert.equal(again.paymentId, sent.paymentId);

    const verified = await sdk.verifyPayment({
      payment_proof: Buffer.from(sent.paymentProof).toString('base64'),
      amount: Number(toAtomicUnits('0.25', 9)),
      recipient: seller.address,
    });
    assert.deepEqual(verified, {
      verified: true,
      transaction_id: sent.signature,
      network: sent.network,
      asset: { symbol: 'SOL', address: null, decimals: 9 },
    });
    const received = await sdk.receivePayment({
      walletAddress: seller.address,
      paymentProof: sent.paymentProof,
      expectedAmount: 0.25,
      resource: 'https://x.example/a',
    });
    assert.equal(received.amountReceived, 0.25);
    assert.equal(received.sender, buyer.address);

    const status = await sdk.paymentStatus(sent.paymentId);
    assert.equal(status.paymentId, sent.paymentId);
    assert.equal(status.amount, 0.25);
    const history = await sdk.paymentHistory(seller.address, { type: 'received' });
    assert.deepEqual(
      history.payments.map((p) => [p.type, p.amount, p.sender]),
      [['received', 0.25, buyer.address]],
    );
    assert.equal(history.limit, 50);

    const built = await sdk.buildSendTransaction({
      walletAddress: buyer.address,
      recipientAddress: seller.address,
      amount: 0.01,
    });
    assert.ok(Buffer.from(built.transaction, 'base64').length > 100);
    assert.ok(built.expiresAt > Date.now());
    // A second proof of the same payment is not needed: the receive build refuses a used proof by code.
    await assert.rejects(
      sdk.buildReceiveTransaction({
        walletAddress: seller.address,
        paymentProof: sent.paymentProof,
        expectedAmount: 0.25,
      }),
      (error: unknown) => isGate402Error(error, 'INVALID_PAYMENT_PROOF'),
    );

    const token = await sdk.tokenInfo(usdc.address);
    assert.equal(token.decimals, 6);
    const portfolio = await sdk.portfolio(seller.address);
    assert.equal(portfolio.publicKey, seller.address);
    assert.deepEqual([portfolio.native.symbol, portfolio.native.amount], ['SOL', '250000000']);
  });

  it('calls the facilitator and webhook endpoints (Premium plan)', async () => {
    const sdk = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey('premium') });
    const supported = await sdk.facilitatorSupported();
    assert.ok(supported.kinds.some((k) => k.scheme === 'exact' && k.network === 'eip155:31337'));
    // An empty payload is refused as x402 refuses it: data, not an exception.
    const verdict = await sdk.facilitatorVerify({
      x402Version: 2,
      paymentPayload: {},
      paymentRequirements: {},
    });
    assert.equal(verdict.isValid, false);
    assert.match(verdict.invalidReason ?? '', /^invalid_/);

    const hook = await sdk.createWebhook({ url: 'https://127.0.0.1:9/hook', eventTypes: [] });
    assert.match(hook.secret, /^whsec_/);
    assert.deepEqual(
      (await sdk.webhooks()).webhooks.map((w) => w.id),
      [hook.id],
    );
    assert.deepEqual(await sdk.webhookDeliveries(hook.id, { limit: 5 }), { deliveries: [] });
    const disabled = await sdk.updateWebhook(hook.id, { enabled: false });
    assert.equal(disabled.enabled, false);
    assert.equal(disabled.disabledReason, 'disabled by its account');
    const enabled = await sdk.updateWebhook(hook.id, { enabled: true });
    assert.deepEqual([enabled.enabled, enabled.disabledAt, enabled.disabledReason], [true, null, null]);
    await assert.rejects(sdk.redeliverWebhook(hook.id, 'whd_unknown'), (e: unknown) =>
      isGate402Error(e, 'INVALID_PARAMETERS', 'NOT_FOUND'),
    );
    assert.deepEqual(await sdk.deleteWebhook(hook.id), { id: hook.id, deleted: true });
    assert.deepEqual((await sdk.webhooks()).webhooks, []);
  });

  it('throws refusals as Gate402Error carrying the code of the error catalogue', async () => {
    const sdk = new Gate402Client({ url: gateway.url, apiKey: await gateway.newApiKey() });
    const wallet = await sdk.createWallet({ chain: 'solana' });
    const other = await sdk.createWallet({ chain: 'solana' });

    // Above the native currency's bound (100 SOL): refused naming the amount, before the chain is asked.
    const tooMuch = await sdk
      .sendPayment({ walletAddress: wallet.address, recipientAddress: other.address, amount: 1000 })
      .catch((e: unknown) => e);
    assert.ok(tooMuch instanceof Gate402Error);
    assert.equal(tooMuch.code, 'INVALID_PARAMETERS');
    assert.equal(tooMuch.status, 400);
    assert.ok(tooMuch.details?.amount, JSON.stringify(tooMuch.details));
    assert.match(tooMuch.requestId ?? '', /^req_/);

    await assert.rejects(sdk.paymentStatus('pay_00000000000000000000000000'), (e: unknown) =>
      isGate402Error(e, 'PAYMENT_NOT_FOUND'),
    );
    await assert.rejects(
      new Gate402Client({ url: gateway.url, apiKey: 'g402_sk_not-a-key' }).account(),
      (e: unknown) => e instanceof Gate402Error && e.code === 'UNAUTHORIZED' && e.status === 401,
    );
    await assert.rejects(
      sdk.sendPayment({ walletAddress: wallet.address, recipientAddress: wallet.address, amount: 1 }),
      (e: unknown) => isGate402Error(e, 'INSUFFICIENT_BALANCE', 'INVALID_RECIPIENT'),
    );
  });

  it('gives a money call without an Idempotency-Key one of its own, which its transport error carries for the retry', async () => {
    const apiKey = await gateway.newApiKey();
    const sdk = new Gate402Client({ url: gateway.url, apiKey });
    const buyer = await sdk.createWallet({ chain: 'solana' });
    const seller = await sdk.createWallet({ chain: 'solana' });
    await sdk.faucet({ address: buyer.address, amount: 1 });
    // The gateway pays; its answer is lost on the way back.
    let loseNextAnswer = true;
    const lossy = new Gate402Client({
      url: gateway.url,
      apiKey,
      fetch: async (input, init) => {
        const answer = await fetch(input, init);
        if (loseNextAnswer) {
          loseNextAnswer = false;
          throw new TypeError('socket hang up');
        }
        return answer;
      },
    });
    const body = { walletAddress: buyer.address, recipientAddress: seller.address, amount: 0.01 };
    const lost = await lossy.sendPayment(body).catch((e: unknown) => e);
    assert.ok(lost instanceof Gate402TransportError);
    assert.match(lost.idempotencyKey ?? '', /^gate402-sdk-/);

    const retried = await lossy.sendPayment(body, { idempotencyKey: lost.idempotencyKey ?? '' });
    const history = await sdk.paymentHistory(buyer.address, { type: 'sent' });
    assert.deepEqual(
      history.payments.map((p) => p.paymentId),
      [retried.paymentId],
    );
    // Calls that move no money carry none.
    const reads: (string | null)[] = [];
    await new Gate402Client({
      url: gateway.url,
      apiKey,
      fetch: (input, init) => {
        reads.push(new Headers(init?.headers).get('idempotency-key'));
        return fetch(input, init);
      },
    }).wallets();
    assert.deepEqual(reads, [null]);
  });

  it('ends a request nobody answers at timeoutMs, with a signal of its own and a GC meanwhile', async () => {
    // Accepts the connection and never answers.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const collectGarbage = fullGc();
    const giveUp = new AbortController();
    const collecting = setInterval(collectGarbage, 20);
    try {
      const client = new Gate402Client({ url: `http://127.0.0.1:${port}`, timeoutMs: 300 });
      const timedOut = assert.rejects(
        client.health({ signal: new AbortController().signal }),
        (e: unknown) => e instanceof Gate402TransportError && /timed out/.test(e.message),
      );
      const tooLate = sleep(5_000, undefined, { signal: giveUp.signal }).then(
        () => assert.fail('the 300 ms time limit did not end the request within 5 s'),
        () => undefined, // given up once the test is over
      );
      await Promise.race([timedOut, tooLate]);
    } finally {
      giveUp.abort();
      clearInterval(collecting);
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('throws Gate402TransportError when no gateway answers', async () => {
    const unreachable = new Gate402Client({ url: 'http://127.0.0.1:9', timeoutMs: 2_000 });
    await assert.rejects(
      unreachable.health(),
      (e: unknown) => e instanceof Gate402TransportError && e.status === undefined,
    );
  });
});

/** A full garbage collection, as a busy process may run at any moment (`gc` without --expose-gc). */
function fullGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
