import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../../../src/server.ts';
import { lastCharacterChanged } from '../../support/last-character-changed.ts';
import { bearer, startTestGateway } from '../../support/test-gateway.ts';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).trim().split('\n'));
      done();
    },
  });
  return { lines, stream };
}

describe('logs', () => {
  it('carry request ids and never an API key, even when something logs the headers', async () => {
    const { lines, stream } = capture();
    const logger = createLogger({ logLevel: 'info' }, stream);
    const gw = await startTestGateway({
      logger,
      extraRoutes: (app) =>
        app.get('/test/log-headers', { config: { feature: 'account' } }, async (request) => {
          request.log.info({ headers: request.headers }, 'careless handler logs headers');
          request.log.info({ request: { headers: request.headers } }, 'nested too');
          return { ok: true };
        }),
    });
    try {
      const { key } = await gw.newCaller();
      await gw.app.inject({
        method: 'GET',
        url: '/account',
        headers: { ...bearer(key), 'x-request-id': 'log-test-1' },
      });
      await gw.app.inject({ method: 'GET', url: '/test/log-headers', headers: bearer(key) });
      await gw.app.inject({ method: 'GET', url: '/account', headers: bearer(lastCharacterChanged(key)) });
      const text = lines.join('\n');
      assert.ok(lines.length >= 6, 'requests were logged');
      assert.ok(!text.includes(key.slice(8)), 'no key material in the logs');
      assert.ok(text.includes('[redacted]'), 'the header was replaced, not dropped silently');
      const entries = lines.map((l) => JSON.parse(l));
      assert.ok(
        entries.some((e) => e.reqId === 'log-test-1'),
        'entries carry the request id',
      );
    } finally {
      await gw.close();
    }
  });

  it("write a request's entries only at enabled levels, each with its request id", async () => {
    const { lines, stream } = capture();
    const logger = createLogger({ logLevel: 'warn' }, stream);
    const gw = await startTestGateway({
      logger,
      extraRoutes: (app) =>
        app.get('/test/levels', { config: { feature: 'account' } }, async (request) => {
          request.log.info('below the level');
          request.log.warn({ step: 1 }, 'at the level');
          request.log.child({ part: 'inner' }).error('from a child');
          return { level: request.log.level };
        }),
    });
    try {
      const { key } = await gw.newCaller();
      const response = await gw.app.inject({
        method: 'GET',
        url: '/test/levels',
        headers: { ...bearer(key), 'x-request-id': 'levels-1' },
      });
      assert.deepEqual(response.json(), { level: 'warn' });
      const entries = lines.map((l) => JSON.parse(l));
      assert.deepEqual(
        entries.map((e) => [e.msg, e.reqId, e.part]),
        [
          ['at the level', 'levels-1', undefined],
          ['from a child', 'levels-1', 'inner'],
        ],
      );
    } finally {
      await gw.close();
    }
  });
});
