import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Localnet, startLocalnet } from '@gate402/localnet';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import type { SolanaAdapter } from '../../../src/chains/solana/solana-adapter.ts';
import { GatewayMetrics } from '../../../src/metrics/gateway-metrics.ts';
import { solanaAdapterFor } from '../../support/solana-adapter-for.ts';
import { openStream } from '../../support/stream-client.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { WebhookReceiver } from '../../support/webhook-receiver.ts';

const TOKEN = 'metrics-token-0123456789';
const LAMPORTS = 1_000_000_000n;

/**
 * GET /metrics after real traffic: a payment on a real localnet, status reads, an unknown route, a
 * rate-limited caller and webhook deliveries (one failure, then successes); each series is checked
 * with its value.
 */
describe('Prometheus metrics', () => {
  let localnet: Localnet;
  let chain: SolanaAdapter;
  let gw: TestGateway;
  let receiver: WebhookReceiver;
  let metrics: GatewayMetrics;

  before(async () => {
    localnet = await startLocalnet({ port: 0, slotMs: 20, finalizedDepth: 8 });
    metrics = new GatewayMetrics();
    chain = solanaAdapterFor(localnet, { urls: [localnet.rpcUrl], observer: metrics });
    receiver = new WebhookReceiver((n) => (n === 1 ? 500 : 204));
    gw = await startTestGateway({
      networks: new NetworkRegistry([chain]),
      allowPrivateOutboundUrls: true,
      events: { config: { allowPrivateOutboundUrls: true, webhookRetryBaseMs: 50, eventsPollMs: 50 } },
      metrics: { registry: metrics, token: TOKEN },
    });
  });
  after(async () => {
    await gw?.close();
    await receiver?.close();
    await chain?.close();
    await localnet?.close();
  });

  const scrape = (authorization?: string) =>
    gw.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: authorization === undefined ? {} : { authorization },
    });

  it('refuses a scrape without the metrics token, or with an API key', async () => {
    const caller = await gw.newCaller('premium');
    for (const authorization of [
      undefined,
      'Bearer wrong-token-0123456789',
      bearer(caller.key).authorization,
    ]) {
      const refused = await scrape(authorization);
      assert.equal(refused.statusCode, 401);
      assert.equal(refused.json().error.code, 'UNAUTHORIZED');
      assert.ok(!refused.body.includes('gate402_'));
    }
  });

  it('is described in the served OpenAPI document, behind its own bearer scheme', async () => {
    const document = (await gw.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    assert.deepEqual(document.paths['/metrics'].get.security, [{ metricsToken: [] }]);
    assert.equal(document.components.securitySchemes.metricsToken.scheme, 'bearer');
  });

  it('counts requests by route pattern, payments, confirmations, RPC calls, 429s and webhook results', async () => {
    const buyer = await gw.newCaller('premium');
    const seller = await gw.newCaller('premium');
    const url = await receiver.start();
    const hook = await gw.app.inject({
      method: 'POST',
      url: '/webhooks',
      headers: bearer(buyer.key),
      payload: { url, eventTypes: ['payment.sent', 'payment.confirmed'] },
    });
    assert.equal(hook.statusCode, 200, hook.body);
    const wallet = async (key: string) =>
      (
        await gw.app.inject({
          method: 'POST',
          url: '/wallets',
          headers: bearer(key),
          payload: { chain: 'solana' },
        })
      ).json().address as string;
    const from = await wallet(buyer.key);
    const to = await wallet(seller.key);
    localnet.airdrop(from, 2n * LAMPORTS);
    await new Promise((resolve) => setTimeout(resolve, 100));

    const sent = await gw.app.inject({
      method: 'POST',
      url: '/payment/send',
      headers: bearer(buyer.key),
      payload: { walletAddress: from, recipientAddress: to, amount: 0.1 },
    });
    assert.equal(sent.statusCode, 200, sent.body);
    // At least confirmed: on a quick localnet the send may already see its slot finalized.
    assert.ok(['confirmed', 'finalized'].includes(sent.json().status), sent.body);
    const { paymentId } = sent.json();
    for (let i = 0; i < 2; i++) {
      const status = await gw.app.inject({
        method: 'GET',
        url: `/payment/status/${paymentId}`,
        headers: bearer(buyer.key),
      });
      assert.equal(status.statusCode, 200);
    }
    assert.equal((await gw.app.inject({ method: 'GET', url: `/no/such/${paymentId}` })).statusCode, 404);

    const limited = await gw.newCaller('enterprise', 2);
    const codes: number[] = [];
    for (let i = 0; i < 3; i++) {
      codes.push(
        (await gw.app.inject({ method: 'GET', url: '/account', headers: bearer(limited.key) })).statusCode,
      );
    }
    assert.deepEqual(codes, [200, 200, 429]);

    // payment.sent and payment.confirmed: the first attempt answered 500, then three 204s.
    await receiver.until(3);
    await new Promise((resolve) => setTimeout(resolve, 200));

    const scraped = await scrape(`Bearer ${TOKEN}`);
    assert.equal(scraped.statusCode, 200);
    assert.match(scraped.headers['content-type'] as string, /^text\/plain; version=0\.0\.4/);
    const text = scraped.body;
    const value = (series: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      assert.ok(line !== undefined, `no series ${series} in\n${text.slice(0, 4000)}`);
      return Number(line.slice(series.length + 1));
    };
    const network = localnet.network;

    assert.equal(
      value(
        'gate402_http_request_duration_seconds_count{method="GET",route="/payment/status/:paymentId",status="200"}',
      ),
      2,
    );
    assert.equal(
      value('gate402_http_request_duration_seconds_count{method="POST",route="/payment/send",status="200"}'),
      1,
    );
    assert.equal(
      value('gate402_http_request_duration_seconds_count{method="GET",route="/account",status="429"}'),
      1,
    );
    assert.equal(
      value('gate402_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"}'),
      1,
    );
    assert.ok(!text.includes(paymentId), 'raw URLs (and the ids in them) never become labels');
    assert.equal(value('gate402_rate_limit_rejections_total{plan="enterprise"}'), 1);
    assert.equal(
      value(`gate402_rpc_calls_total{network="${network}",method="sendTransaction",outcome="ok"}`),
      1,
    );
    assert.ok(value(`gate402_rpc_call_duration_seconds_count{network="${network}"}`) >= 5);
    assert.equal(value(`gate402_payment_confirmation_seconds_count{network="${network}"}`), 1);
    const confirmationSeconds = value(`gate402_payment_confirmation_seconds_sum{network="${network}"}`);
    assert.ok(confirmationSeconds > 0 && confirmationSeconds < 10, String(confirmationSeconds));
    assert.equal(value('gate402_webhook_deliveries_total{result="retrying"}'), 1);
    assert.equal(value('gate402_webhook_deliveries_total{result="succeeded"}'), 2);
    assert.equal(value('gate402_outbox_lag_events'), 0);
    // Counted once, as confirmed, or as finalized once the reconciler has seen its slot finalized.
    const byStatus = (status: string) => {
      const series = `gate402_payments{status="${status}",network="${network}"}`;
      return text.split('\n').some((l) => l.startsWith(`${series} `)) ? value(series) : 0;
    };
    assert.equal(byStatus('confirmed') + byStatus('finalized'), 1);
    assert.ok(value('process_cpu_user_seconds_total') > 0, 'process metrics are there too');
  });

  it('counts payment-stream attempts refused by the rate limit, on the upgrade and after an auth message', async () => {
    const rejections = async () => {
      const text = (await scrape(`Bearer ${TOKEN}`)).body;
      const line = text
        .split('\n')
        .find((l) => l.startsWith('gate402_rate_limit_rejections_total{plan="enterprise"} '));
      return line === undefined ? 0 : Number(line.split(' ')[1]);
    };
    const address = await gw.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `${address.replace(/^http/, 'ws')}/v1/payments/stream`;
    const before = await rejections();
    // One attempt a minute: the first stream opens, the next two are refused.
    const limited = await gw.newCaller('enterprise', 1);
    const open = await openStream(url, { headers: bearer(limited.key) });
    const refused = await openStream(url, { headers: bearer(limited.key) }).then(
      () => assert.fail('the second upgrade was accepted'),
      (error: { status?: number; body?: string }) => error,
    );
    assert.equal(refused.status, 429);
    assert.equal(JSON.parse(refused.body ?? '{}').error.code, 'RATE_LIMIT_EXCEEDED');
    const byMessage = await openStream(url);
    byMessage.send({ type: 'auth', apiKey: limited.key });
    assert.equal((await byMessage.closed).code, 4029);
    open.close();
    assert.equal(await rejections(), before + 2);
  });
});
