import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestGateway, type TestGateway } from './support/test-gateway.ts';

describe('OpenAPI and docs', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
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
});
