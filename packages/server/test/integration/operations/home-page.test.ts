import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { startDashboardApp } from '../../support/dashboard-app.ts';
import { startTestGateway } from '../../support/test-gateway.ts';

describe('GET /', () => {
  it('sends a browser to the dashboard when it is served', async () => {
    const gw = await startDashboardApp();
    try {
      const res = await gw.app.inject({
        method: 'GET',
        url: '/',
        headers: { accept: 'text/html,*/*;q=0.8' },
      });
      assert.equal(res.statusCode, 302);
      assert.equal(res.headers.location, '/dashboard');
      const curl = await gw.app.inject({ method: 'GET', url: '/', headers: { accept: '*/*' } });
      assert.equal(curl.statusCode, 302);
    } finally {
      await gw.close();
    }
  });

  it('without the dashboard, answers a small page of links under a policy that allows no script', async () => {
    const gw = await startTestGateway();
    try {
      const res = await gw.app.inject({ method: 'GET', url: '/' });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
      assert.match(res.body, /<a href="docs">API documentation<\/a>/);
      assert.match(res.body, /<a href="healthz">Health<\/a>/);
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+=*'; base-uri 'none'/);
      assert.doesNotMatch(res.body, /<script/);
      // The page's one style block is the one the policy's hash allows, or browsers would drop it.
      const style = /<style>([^<]*)<\/style>/.exec(res.body)?.[1] ?? '';
      assert.ok(csp.includes(`'sha256-${createHash('sha256').update(style).digest('base64')}'`));
      assert.equal(res.headers['x-content-type-options'], 'nosniff');

      const json = await gw.app.inject({ method: 'GET', url: '/', headers: { accept: 'application/json' } });
      assert.equal(json.statusCode, 200);
      assert.deepEqual(json.json().links, {
        docs: '/docs',
        openapi: '/openapi.json',
        asyncapi: '/asyncapi.json',
        health: '/healthz',
      });
      assert.equal((await gw.app.inject({ method: 'HEAD', url: '/' })).statusCode, 200);
    } finally {
      await gw.close();
    }
  });
});
