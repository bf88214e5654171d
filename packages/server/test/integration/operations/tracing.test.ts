import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { PAYMENT_ID_ATTRIBUTE, tracer } from '../../../src/telemetry/tracing.ts';
import { startTracing, type Tracing } from '../../../src/telemetry/tracing-sdk.ts';
import { callerOf } from '../../support/api-caller.ts';
import { tempDir } from '../../support/databases.ts';
import { newParty } from '../../support/party.ts';
import { type Party, type PaymentFixture, startPaymentFixture } from '../../support/payment-fixture.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { until } from '../../support/until.ts';
import { WebhookReceiver } from '../../support/webhook-receiver.ts';

const PAYMENT_ID = /^pay_[0-9A-HJKMNP-TV-Z]{26}$/;

function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** Whether `span` is `ancestor` or below it. */
function isUnder(span: ReadableSpan, ancestor: ReadableSpan, all: readonly ReadableSpan[]): boolean {
  let at: ReadableSpan | undefined = span;
  while (at !== undefined) {
    if (at.spanContext().spanId === ancestor.spanContext().spanId) return true;
    const parent = parentOf(at);
    at = parent === undefined ? undefined : all.find((s) => s.spanContext().spanId === parent);
  }
  return false;
}

describe('OpenTelemetry tracing through a real gateway on the embedded localnet', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let f: PaymentFixture;
  let buyer: Party;
  let seller: Party;
  let sellerGateway: TestGateway;
  let s: ReturnType<typeof callerOf>;
  const receiver = new WebhookReceiver(() => 204);

  before(async () => {
    // Started before the gateways are built, as `gate402 serve` does.
    tracing = startTracing({ exporter, batch: false });
    f = await startPaymentFixture();
    buyer = await f.party(2);
    // The seller on a second gateway with the buyer's proof keys and storage of its own: it has no
    // record of the buyer's payment, so its receive asks the chain (a gateway answers its own sends
    // from its records).
    sellerGateway = await startTestGateway({
      networks: new NetworkRegistry([f.chain.adapter]),
      masterKey: f.gw.masterKey,
      events: { config: { allowPrivateOutboundUrls: true, webhookRetryBaseMs: 50 } },
    });
    seller = await newParty(sellerGateway, 'solana', { plan: 'premium' });
    s = callerOf(sellerGateway);
  });
  after(async () => {
    await sellerGateway?.close();
    await f?.close();
    await tracing?.shutdown();
    await receiver.close();
  });

  it('a receive is one request span, with RPC and storage spans under it, carrying the payment id', async () => {
    const hook = await s.post(seller.key, '/webhooks', { url: await receiver.start() });
    assert.equal(hook.statusCode, 200, hook.body);
    const sent = await f.post(buyer.key, '/payment/send', {
      walletAddress: buyer.wallet,
      recipientAddress: seller.wallet,
      amount: 0.01,
    });
    assert.equal(sent.statusCode, 200, sent.body);
    exporter.reset();
    const received = await s.post(seller.key, '/payment/receive', {
      walletAddress: seller.wallet,
      paymentProof: sent.json().paymentProof,
      expectedAmount: 0.01,
    });
    assert.equal(received.statusCode, 200, received.body);
    const paymentId = received.json().paymentId as string;
    assert.match(paymentId, PAYMENT_ID);

    const spans = exporter.getFinishedSpans();
    const requests = spans.filter((s) => s.name === 'POST /payment/receive');
    assert.equal(requests.length, 1, spans.map((s) => s.name).join(', '));
    const request = requests[0] as ReadableSpan;
    assert.equal(request.kind, 1 /* SERVER */);
    assert.equal(request.attributes['http.route'], '/payment/receive');
    assert.equal(request.attributes['http.request.method'], 'POST');
    assert.equal(request.attributes['http.response.status_code'], 200);
    assert.equal(request.attributes[PAYMENT_ID_ATTRIBUTE], paymentId);

    const under = spans.filter((s) => s !== request && isUnder(s, request, spans));
    const rpc = under.filter((s) => s.name.startsWith('rpc '));
    assert.ok(
      rpc.length > 0,
      `RPC spans under the request: ${under.map((s) => s.name).join(', ')}; all: ${spans.map((s) => `${s.name}<${parentOf(s) ?? 'root'}:${s.spanContext().spanId}`).join(' ')}`,
    );
    for (const span of rpc) {
      assert.equal(span.kind, 2 /* CLIENT */);
      assert.equal(span.attributes['rpc.system'], 'jsonrpc');
      assert.equal(span.attributes['gate402.chain.family'], 'solana');
      assert.equal(typeof span.attributes['rpc.method'], 'string');
    }
    const storage = under.filter((s) => s.name === 'db.transaction');
    assert.ok(
      storage.some((s) => s.attributes[PAYMENT_ID_ATTRIBUTE] === paymentId),
      'the transaction that records the payment names it',
    );
    // Nothing of the caller's secrets: no header, no key, anywhere in any span of the request.
    for (const span of [request, ...under]) {
      for (const [key, value] of Object.entries(span.attributes)) {
        assert.ok(!/header|authorization|cookie/i.test(key), `${span.name}: ${key}`);
        assert.ok(!String(value).includes(seller.key), `${span.name}: ${key} holds the API key`);
      }
    }

    // The webhook of the payment goes out in a delivery span, with its W3C trace context.
    await receiver.until(1);
    const delivered = receiver.received.find((r) => r.body.includes(paymentId));
    assert.ok(delivered, 'the webhook of the received payment arrived');
    const traceparent = delivered.headers.traceparent ?? '';
    const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(traceparent);
    assert.ok(match, `traceparent: ${traceparent}`);
    await until('the delivery span to end', async () =>
      exporter
        .getFinishedSpans()
        .some((s) => s.name === 'webhook.deliver' && s.spanContext().spanId === match[2]),
    );
    const delivery = exporter
      .getFinishedSpans()
      .find((s) => s.spanContext().spanId === match[2]) as ReadableSpan;
    assert.equal(delivery.spanContext().traceId, match[1]);
    assert.equal(delivery.attributes[PAYMENT_ID_ATTRIBUTE], paymentId);
    assert.equal(delivery.attributes['http.response.status_code'], 204);
    assert.ok(!JSON.stringify(delivery.attributes).includes('127.0.0.1'), 'no endpoint URL in the span');
  });

  it('names a request span by its route template, never by the values in its path', async () => {
    exporter.reset();
    const res = await s.get(seller.key, '/payment/status/pay_00000000000000000000000000');
    assert.equal(res.statusCode, 404);
    const [span] = exporter.getFinishedSpans().filter((s) => s.kind === 1);
    assert.equal(span?.name, 'GET /payment/status/:paymentId');
    assert.equal(span?.attributes['http.response.status_code'], 404);
  });
});

describe('tracing off (the default)', () => {
  /**
   * A child process runs a gateway and serves a request, recording every module it resolves: without
   * OTEL_TRACES_EXPORTER no OpenTelemetry module may be loaded; with it (the control) they are.
   */
  function modulesLoaded(env: Record<string, string>): string[] {
    const dir = tempDir();
    try {
      const record = join(dir.path, 'resolved.txt');
      const probe = `data:text/javascript,${encodeURIComponent(`
        import { register } from 'node:module';
        register('data:text/javascript,' + encodeURIComponent(\`
          import { appendFileSync } from 'node:fs';
          export async function resolve(specifier, context, next) {
            const resolved = await next(specifier, context);
            appendFileSync(${JSON.stringify(record)}, resolved.url + '\\\\n');
            return resolved;
          }\`));
      `)}`;
      const script = new URL('../../support/serve-one-request.ts', import.meta.url).pathname;
      const child = spawnSync(
        process.execPath,
        ['--conditions=@gate402/source', '--import', 'tsx', '--import', probe, script],
        { env: { ...process.env, OTEL_TRACES_EXPORTER: '', ...env }, encoding: 'utf8', timeout: 120_000 },
      );
      assert.equal(child.status, 0, child.stderr);
      assert.match(child.stdout, /served 200/);
      return readFileSync(record, 'utf8')
        .split('\n')
        .filter((url) => url !== '');
    } finally {
      dir.dispose();
    }
  }

  it('loads no OpenTelemetry module and makes no span', () => {
    assert.equal(tracer().enabled, false);
    const loaded = modulesLoaded({});
    assert.ok(
      loaded.some((url) => url.includes('/src/app.ts')),
      'the probe saw the gateway load',
    );
    assert.deepEqual(
      loaded.filter((url) => url.includes('@opentelemetry') || url.includes('tracing-sdk')),
      [],
    );
  });

  it('loads the SDK once OTEL_TRACES_EXPORTER asks for traces (the control)', () => {
    const loaded = modulesLoaded({ OTEL_TRACES_EXPORTER: 'console' });
    assert.ok(loaded.some((url) => url.includes('@opentelemetry/sdk-trace-node')));
  });
});
