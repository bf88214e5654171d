import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ChainError } from '../../../src/chains/chain-error.ts';
import { ERROR_CATALOGUE } from '../../../src/domain/error-catalogue.ts';
import { GatewayError } from '../../../src/domain/gateway-error.ts';
import { StorageUnavailableError } from '../../../src/store/storage-unavailable.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/** A route with the shape of spec §4.1's body, standing in for the payment routes of later issues. */
function testRoutes(app: FastifyInstance) {
  app.post(
    '/test/send',
    {
      config: { feature: 'payments' },
      schema: {
        body: Type.Object(
          {
            walletAddress: Type.String({ minLength: 1, maxLength: 64 }),
            amount: Type.Number({ minimum: 0.001, maximum: 100 }),
            priorityFee: Type.Optional(Type.Number({ minimum: 0.00001, maximum: 0.01 })),
            metadata: Type.Optional(Type.Object({}, { maxProperties: 2 })),
            type: Type.Optional(Type.Union([Type.Literal('sent'), Type.Literal('received')])),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => ({ success: true, echo: request.body }),
  );
  app.get('/test/chain-down', { config: { feature: 'payments' } }, async () => {
    throw new ChainError('unavailable', 'connect ECONNREFUSED 10.1.2.3:8899');
  });
  app.get('/test/storage-down', { config: { feature: 'payments' } }, async () => {
    throw new StorageUnavailableError('the PostgreSQL connection failed', {
      cause: new Error('connect ECONNREFUSED postgres://admin:hunter2@db'),
    });
  });
  app.get('/test/storage-down-wrapped', { config: { feature: 'payments' } }, async () => {
    // A service that wrapped it: still an outage, not a fault of ours.
    throw new GatewayError('INTERNAL_ERROR', { cause: new Error('lookup failed', { cause: busy() }) });
  });
  app.get('/test/boom', { config: { feature: 'payments' } }, async () => {
    throw new Error('connection to postgres://admin:hunter2@db failed at pool.ts:42');
  });
}

describe('errors (spec §7)', () => {
  let gw: TestGateway;
  let key: string;
  before(async () => {
    gw = await startTestGateway({ extraRoutes: testRoutes, bodyLimitBytes: 2048 });
    ({ key } = await gw.newCaller('standard'));
  });
  after(() => gw.close());

  const post = (payload: string, contentType = 'application/json') =>
    gw.app.inject({
      method: 'POST',
      url: '/test/send',
      headers: { ...bearer(key), 'content-type': contentType },
      payload,
    });

  it('names every bad field and its rule in details', async () => {
    const res = await post(
      JSON.stringify({ amount: 500, priorityFee: 1, metadata: { a: 1, b: 2, c: 3 }, extra: 1 }),
    );
    assert.equal(res.statusCode, 400);
    const body = res.json();
    assert.equal(body.success, false);
    assert.equal(body.error.code, 'INVALID_PARAMETERS');
    assert.deepEqual(body.error.details, {
      walletAddress: 'is required',
      amount: 'must be between 0.001 and 100',
      priorityFee: 'must be between 0.00001 and 0.01',
      metadata: 'must have at most 2 fields',
      extra: 'is not a known field',
    });
    assert.equal(
      body.error.message,
      'Invalid request parameters: walletAddress, extra, amount, priorityFee, metadata.',
    );
    assert.match(body.error.requestId, /^req_/);
  });

  it('says which part of the request was wrong: path or query parameters', async () => {
    const path = await gw.app.inject({
      method: 'GET',
      url: '/payment/status/not-an-id',
      headers: bearer(key),
    });
    assert.equal(path.statusCode, 400);
    assert.equal(path.json().error.message, 'Invalid path parameters: paymentId.');
    assert.deepEqual(Object.keys(path.json().error.details), ['paymentId']);
    const query = await gw.app.inject({
      method: 'GET',
      url: '/payment/history/11111111111111111111111111111112?limit=100000',
      headers: bearer(key),
    });
    assert.equal(query.statusCode, 400);
    assert.equal(query.json().error.message, 'Invalid query parameters: limit.');
    assert.deepEqual(Object.keys(query.json().error.details), ['limit']);
  });

  it('does not coerce types in a body: an amount sent as a string is refused', async () => {
    const res = await post(JSON.stringify({ walletAddress: 'w', amount: '5', type: 'other' }));
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json().error.details, {
      amount: 'must be a number',
      type: 'must be one of sent, received',
    });
  });

  it('accepts a valid body', async () => {
    const res = await post(JSON.stringify({ walletAddress: 'w', amount: 0.001 }));
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { success: true, echo: { walletAddress: 'w', amount: 0.001 } });
  });

  it('answers malformed JSON with 400 INVALID_PARAMETERS', async () => {
    const res = await post('{"amount": 5,');
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json().error.code, 'INVALID_PARAMETERS');
    assert.deepEqual(res.json().error.details, { body: 'must be valid JSON' });
  });

  it('answers a body that is not JSON with 415', async () => {
    const res = await post('amount=5', 'application/x-www-form-urlencoded');
    assert.equal(res.statusCode, 415);
    assert.equal(res.json().error.code, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers a body over the limit with 413', async () => {
    const res = await post(JSON.stringify({ walletAddress: 'x'.repeat(4096), amount: 1 }));
    assert.equal(res.statusCode, 413);
    assert.equal(res.json().error.code, 'PAYLOAD_TOO_LARGE');
  });

  it('answers an unknown route with 404 NOT_FOUND, authenticated or not', async () => {
    for (const headers of [{}, bearer(key)]) {
      const res = await gw.app.inject({ method: 'GET', url: '/no/such/route?x=1', headers });
      assert.equal(res.statusCode, 404);
      assert.equal(res.json().error.code, 'NOT_FOUND');
      assert.equal(res.json().error.message, 'No route GET /no/such/route.');
    }
  });

  it('answers a URL the router refuses (bad percent-encoding, an over-long path parameter) with 400 INVALID_PARAMETERS', async () => {
    for (const [url, rule] of [
      ['/payment/status/%E0%A4%A', 'must be valid percent-encoded UTF-8'],
      [`/payment/status/${'a'.repeat(101)}`, 'each path parameter must be at most 100 characters'],
    ] as const) {
      const res = await gw.app.inject({
        method: 'GET',
        url,
        headers: { ...bearer(key), 'x-request-id': 'trace-url' },
      });
      assert.equal(res.statusCode, 400, url);
      assert.equal(res.headers['x-request-id'], 'trace-url');
      const { error } = res.json();
      assert.deepEqual(
        [error.code, error.details, error.requestId],
        ['INVALID_PARAMETERS', { path: rule }, 'trace-url'],
      );
    }
    // At the limit, the route's own checks answer as for any other id.
    const res = await gw.app.inject({
      method: 'GET',
      url: `/payment/status/${'a'.repeat(100)}`,
      headers: bearer(key),
    });
    assert.notEqual(res.json().error.details?.path, 'each path parameter must be at most 100 characters');
  });

  it("answers a request Node's HTTP parser cannot read with the same error body (400, 431)", async () => {
    const address = new URL(await gw.app.listen({ port: 0, host: '127.0.0.1' }));
    const rawAnswer = (request: string) =>
      new Promise<string>((resolve, reject) => {
        let answer = '';
        const socket = connect(Number(address.port), address.hostname, () => socket.write(request));
        socket.on('data', (chunk) => {
          answer += chunk.toString();
        });
        socket.on('end', () => resolve(answer));
        socket.on('error', reject);
      });
    for (const [request, status, details] of [
      ['GARBAGE\r\n\r\n', '400 Bad Request', { request: 'must be valid HTTP/1.1' }],
      [
        `GET /account HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        '431 Request Header Fields Too Large',
        { headers: 'must total at most 16 KiB' },
      ],
    ] as const) {
      const answer = await rawAnswer(request);
      assert.ok(answer.startsWith(`HTTP/1.1 ${status}\r\n`), answer);
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
      assert.deepEqual(
        [body.success, body.error.code, body.error.details],
        [false, 'INVALID_PARAMETERS', details],
      );
    }
  });

  it('answers the unexpected with 500 INTERNAL_ERROR, a request id, and no internals', async () => {
    const res = await gw.app.inject({
      method: 'GET',
      url: '/test/boom',
      headers: { ...bearer(key), 'x-request-id': 'trace-123' },
    });
    assert.equal(res.statusCode, 500);
    assert.deepEqual(res.json(), {
      success: false,
      error: { code: 'INTERNAL_ERROR', message: 'Internal error.', requestId: 'trace-123' },
    });
    assert.equal(res.headers['x-request-id'], 'trace-123');
    assert.ok(!res.body.includes('hunter2') && !res.body.includes('pool.ts'));
  });

  it('answers a chain that cannot be reached with 503 CHAIN_UNAVAILABLE and retryAfter, hiding the address', async () => {
    const res = await gw.app.inject({ method: 'GET', url: '/test/chain-down', headers: bearer(key) });
    assert.equal(res.statusCode, 503);
    assert.equal(res.headers['retry-after'], '2');
    assert.deepEqual(res.json().error.code, 'CHAIN_UNAVAILABLE');
    assert.equal(res.json().error.retryAfter, 2);
    assert.ok(!res.body.includes('10.1.2.3'));
  });

  it('answers storage down, stalled or locked 503 SERVICE_UNAVAILABLE with retryAfter, without internals', async () => {
    for (const url of ['/test/storage-down', '/test/storage-down-wrapped']) {
      const res = await gw.app.inject({ method: 'GET', url, headers: bearer(key) });
      assert.equal(res.statusCode, 503, url);
      assert.equal(res.headers['retry-after'], '1', url);
      assert.equal(res.json().error.code, 'SERVICE_UNAVAILABLE', url);
      assert.equal(res.json().error.message, 'Storage is unavailable; retry shortly.', url);
      assert.equal(res.json().error.retryAfter, 1, url);
      assert.ok(!res.body.includes('hunter2') && !res.body.includes('SQLITE'), url);
    }
  });

  it('replaces an unsafe X-Request-Id instead of echoing it', async () => {
    const res = await gw.app.inject({
      method: 'GET',
      url: '/healthz',
      headers: { 'x-request-id': 'a\u0000b c' },
    });
    assert.match(String(res.headers['x-request-id']), /^req_[0-9a-f-]{36}$/);
  });

  it('keeps every code the spec names in the one catalogue', () => {
    for (const code of [
      'INVALID_PARAMETERS',
      'UNAUTHORIZED',
      'FORBIDDEN',
      'RATE_LIMIT_EXCEEDED',
      'INSUFFICIENT_BALANCE',
      'INVALID_PAYMENT_PROOF',
      'PAYMENT_VERIFICATION_FAILED',
      'INVALID_RECIPIENT',
      'RATE_LIMIT',
    ]) {
      assert.ok(code in ERROR_CATALOGUE, code);
    }
  });
});

/** better-sqlite3's error when another process held the lock past busy_timeout. */
function busy(): Error {
  return Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
}
