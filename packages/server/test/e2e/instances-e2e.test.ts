import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Localnet } from '@gate402/localnet';
import type { SolanaAdapter } from '../../src/chains/solana/solana-adapter.ts';
import { generateSolanaKeypair } from '../../src/chains/solana/solana-keypair.ts';
import { RATE_WINDOW_MS } from '../../src/domain/plan.ts';
import { type CrashableGateway, cliAccount, cliWallet, sleep, waitFor } from '../support/crash-harness.ts';
import { SKIP_POSTGRES, SKIP_REDIS } from '../support/databases.ts';
import { openStream, type StreamClient } from '../support/stream-client.ts';
import { type TwoInstances, twoInstances } from '../support/two-instances.ts';

const LAMPORTS = 1_000_000_000n;
/** The rate limit of the account that shows the shared count: small, so a few requests exceed it. */
const LIMIT = 6;

/**
 * Issue 10, end to end: two `gate402 serve` processes on one PostgreSQL schema and one Redis, as behind
 * a load balancer. A payment sent through instance A reaches a stream opened on instance B (the outbox
 * poll is set to a minute, so only the Redis wake-up can bring it promptly), and one account's requests
 * spread over A and B draw from one rate-limit window: the request past the limit is refused on
 * whichever instance it lands.
 */
describe('two gateway processes on PostgreSQL + Redis, end to end', {
  skip: SKIP_POSTGRES || SKIP_REDIS,
}, () => {
  let instances: TwoInstances | undefined;
  let localnet: Localnet;
  let chain: SolanaAdapter;
  let a: CrashableGateway;
  let b: CrashableGateway;
  let stream: StreamClient | undefined;

  before(async () => {
    instances = await twoInstances({ EVENTS_POLL_MS: '60000', PAYMENT_CONFIRM_TIMEOUT_MS: '10000' });
    ({ localnet, chain, a, b } = instances);
    await Promise.all([a.start(), b.start()]);
  });
  after(async () => {
    stream?.close();
    await instances?.dispose();
  });

  it('streams a payment sent through A to a subscriber on B, at once', { timeout: 60_000 }, async () => {
    // Made with the CLI on the storage both instances share.
    const { key, wallet } = cliWallet(a, 'e2e payer', 'solana');
    localnet.airdrop(wallet, 10n * LAMPORTS);
    await waitFor(async () => (await chain.getBalance(wallet)) === 10n * LAMPORTS);
    const recipient = generateSolanaKeypair().address;

    stream = await openStream(`${b.url.replace(/^http/, 'ws')}/v1/payments/stream`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await stream.until((c) => c.messages.some((m) => m.type === 'authenticated'), 5_000, 'authenticated');

    const started = Date.now();
    const sent = await fetch(`${a.url}/payment/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ walletAddress: wallet, recipientAddress: recipient, amount: 0.25 }),
    });
    assert.equal(sent.status, 200, await sent.clone().text());
    const { paymentId, status } = (await sent.json()) as { paymentId: string; status: string };
    assert.ok(['submitted', 'confirmed'].includes(status), status);

    const ofPayment = (c: StreamClient) =>
      c.events().filter((e) => (e.data as { paymentId?: string }).paymentId === paymentId);
    await stream.until(
      (c) => ofPayment(c).some((e) => e.type === 'payment.confirmed'),
      10_000,
      'payment.sent and payment.confirmed on B',
    );
    // Both instances poll the outbox once a minute here: only the Redis wake-up brings it this soon.
    assert.ok(Date.now() - started < 10_000, `arrived after ${Date.now() - started} ms`);
    assert.deepEqual(
      ofPayment(stream)
        .map((e) => e.type)
        .slice(0, 2),
      ['payment.sent', 'payment.confirmed'],
    );
    const onB = await b.get<{ paymentId: string; status: string }>(key, `/payment/status/${paymentId}`);
    assert.equal(onB.paymentId, paymentId);
    assert.ok(['confirmed', 'finalized'].includes(onB.status), onB.status);
    assert.equal(await chain.getBalance(recipient), LAMPORTS / 4n, 'paid once');
  });

  it('counts one rate-limit window across both instances: the request past the limit is refused wherever it lands', {
    timeout: 90_000,
  }, async () => {
    const { key } = cliAccount(a, 'e2e limited', LIMIT);
    // All requests of the test fall in one fixed window: start right after a window begins if the
    // current one is about to end.
    const intoWindow = Date.now() % RATE_WINDOW_MS;
    if (intoWindow > RATE_WINDOW_MS - 15_000) await sleep(RATE_WINDOW_MS - intoWindow + 100);

    const account = (gateway: CrashableGateway) =>
      fetch(`${gateway.url}/account`, { headers: { authorization: `Bearer ${key}` } });
    const remaining = (res: Response) => /;r=(\d+);/.exec(res.headers.get('ratelimit') ?? '')?.[1];
    const answers: { via: string; status: number; remaining: string | undefined }[] = [];
    // A, B, A, B, …: each instance alone would allow LIMIT requests; together they allow LIMIT.
    for (let i = 0; i < LIMIT; i++) {
      const via = i % 2 === 0 ? a : b;
      const res = await account(via);
      answers.push({ via: via === a ? 'A' : 'B', status: res.status, remaining: remaining(res) });
    }
    assert.deepEqual(
      answers,
      Array.from({ length: LIMIT }, (_, i) => ({
        via: i % 2 === 0 ? 'A' : 'B',
        status: 200,
        remaining: String(LIMIT - 1 - i),
      })),
    );
    // B has answered only LIMIT / 2 requests itself, yet refuses the next one: the count is shared.
    const overOnB = await account(b);
    assert.equal(overOnB.status, 429);
    const body = (await overOnB.json()) as { error: { code: string; retryAfter: number } };
    assert.equal(body.error.code, 'RATE_LIMIT_EXCEEDED');
    assert.ok(body.error.retryAfter >= 1 && body.error.retryAfter <= 60, String(body.error.retryAfter));
    assert.equal(overOnB.headers.get('retry-after'), String(body.error.retryAfter));
    // And A, which has answered LIMIT / 2 too, refuses as well, the payment stream included.
    assert.equal((await account(a)).status, 429);
    const upgrade = await openStream(`${a.url.replace(/^http/, 'ws')}/v1/payments/stream`, {
      headers: { authorization: `Bearer ${key}` },
    }).then(
      (client) => {
        client.close();
        return 101;
      },
      (error: { status?: number }) => error.status,
    );
    assert.equal(upgrade, 429);
  });
});
