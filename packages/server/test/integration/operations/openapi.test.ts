import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

describe('OpenAPI and docs', () => {
  let gw: TestGateway;
  before(async () => {
    // With payment events, so the webhook routes are there too.
    gw = await startTestGateway({ events: {} });
  });
  after(() => gw.close());

  it('serves an OpenAPI 3.1 document with the security scheme and error responses', async () => {
    const res = await gw.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    const doc = res.json();
    assert.equal(doc.openapi, '3.1.0');
    assert.deepEqual(doc.components.securitySchemes.bearerAuth.scheme, 'bearer');
    const account = doc.paths['/account'].get;
    assert.deepEqual(account.security, [{ bearerAuth: [] }]);
    for (const status of ['200', '400', '401', '403', '429', '500'])
      assert.ok(account.responses[status], status);
    assert.ok(doc.components.schemas.ErrorBody, 'the error body is a named schema');
    assert.equal(doc.paths['/healthz'].get.security, undefined, 'health is public');
    assert.equal(doc.paths['/openapi.json'], undefined, 'the document does not list itself');
  });

  it('names every operation with a stable, unique camelCase operationId', async () => {
    const doc = (await gw.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { operationId?: string }>>;
    };
    const named = Object.fromEntries(
      Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.entries(item).map(([method, operation]) => [
          `${method.toUpperCase()} ${path}`,
          operation.operationId,
        ]),
      ),
    );
    // Published names: generated clients take their method names from these, so they never change.
    assert.deepEqual(named, {
      'GET /healthz': 'getHealth',
      'GET /readyz': 'getReadiness',
      'GET /.well-known/gate402.json': 'getProofKeys',
      'GET /account': 'getAccount',
      'GET /account/summary': 'getAccountSummary',
      'GET /networks': 'listNetworks',
      'POST /faucet': 'fundFromFaucet',
      'POST /wallets': 'createWallet',
      'POST /wallets/challenge': 'createWalletChallenge',
      'POST /wallets/{address}/token-accounts': 'openTokenAccount',
      'GET /wallets': 'listWallets',
      'PATCH /wallets/{address}': 'updateWallet',
      'POST /payment/send': 'sendPayment',
      'POST /payment/receive': 'receivePayment',
      'POST /payment/x402': 'payX402',
      'POST /payment/x402/{paymentId}/check': 'checkX402Payment',
      'GET /payment/status/{paymentId}': 'getPaymentStatus',
      'GET /payment/history/{walletAddress}': 'getPaymentHistory',
      'GET /payment/export': 'exportPayments',
      'POST /payment/refund/{paymentId}': 'refundPayment',
      'POST /transaction/send': 'buildSendTransaction',
      'POST /transaction/receive': 'buildReceiveTransaction',
      'POST /v1/payments/verify': 'verifyPayment',
      'GET /token/info/{mint_address}': 'getTokenInfo',
      'GET /portfolio/{public_key}': 'getPortfolio',
      'GET /facilitator/supported': 'getSupportedPaymentKinds',
      'POST /facilitator/verify': 'verifyX402Payment',
      'POST /facilitator/settle': 'settleX402Payment',
      'POST /facilitator/accepts': 'facilitatorAccepts',
      'GET /facilitator/discovery/resources': 'listDiscoveryResources',
      'GET /facilitator/discovery/search': 'searchDiscoveryResources',
      'POST /webhooks': 'createWebhook',
      'GET /webhooks': 'listWebhooks',
      'DELETE /webhooks/{id}': 'deleteWebhook',
      'PATCH /webhooks/{id}': 'updateWebhook',
      'GET /webhooks/{id}/deliveries': 'listWebhookDeliveries',
      'POST /webhooks/{id}/deliveries/{deliveryId}/redeliver': 'redeliverWebhookDelivery',
      'GET /spend-policy': 'getOwnSpendPolicy',
      'GET /spend-policies': 'listSpendPolicies',
      'GET /spend-policies/account': 'getAccountSpendPolicy',
      'PUT /spend-policies/account': 'setAccountSpendPolicy',
      'DELETE /spend-policies/account': 'deleteAccountSpendPolicy',
      'GET /spend-policies/keys/{keyId}': 'getKeySpendPolicy',
      'PUT /spend-policies/keys/{keyId}': 'setKeySpendPolicy',
      'DELETE /spend-policies/keys/{keyId}': 'deleteKeySpendPolicy',
    });
  });

  it('shows query parameters that have a default as optional, with the default', async () => {
    const doc = (await gw.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const parameters = doc.paths['/payment/history/{walletAddress}'].get.parameters as {
      in: string;
      name: string;
      required: boolean;
      schema: { default?: unknown };
    }[];
    assert.deepEqual(
      parameters.map((p) => [p.in, p.name, p.required, p.schema.default]),
      [
        ['query', 'type', false, 'all'],
        ['query', 'limit', false, 50],
        ['query', 'offset', false, 0],
        ['path', 'walletAddress', true, undefined],
      ],
    );
    // That validation fills them in is shown by packages/client/test/openapi-sdk.test.ts (limit 50).
  });

  it('serves browsable docs from this process, with no outside scripts', async () => {
    const page = await gw.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    const scripts = [...page.body.matchAll(/<(?:script|link)[^>]+(?:src|href)="([^"]+)"/g)].map(
      (m) => m[1] ?? '',
    );
    assert.ok(scripts.length > 0);
    for (const src of scripts) assert.ok(!/^(https?:)?\/\//.test(src), `outside resource ${src}`);
    const bundle = await gw.app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
    assert.equal(bundle.statusCode, 200);
  });

  it("wears gate402's name and mark, not the documentation tool's", async () => {
    const page = await gw.app.inject({ method: 'GET', url: '/docs/' });
    assert.match(page.body, /<title>gate402 \d+\.\d+\.\d+ API<\/title>/);
    assert.match(page.body, /<link rel="icon" type="image\/svg\+xml" href="\.\/static\/theme\/gate402\.svg"/);
    const icon = await gw.app.inject({ method: 'GET', url: '/docs/static/theme/gate402.svg' });
    assert.equal(icon.statusCode, 200);
    assert.match(icon.body, /<svg/);
    const initializer = await gw.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    assert.equal(initializer.statusCode, 200);
    const logo = /img\.src = 'data:image\/svg\+xml;base64,([^']+)'/.exec(initializer.body)?.[1];
    assert.ok(logo, "the top bar shows gate402's logo");
    assert.match(Buffer.from(logo, 'base64').toString('utf8'), />gate402</);
  });
});
