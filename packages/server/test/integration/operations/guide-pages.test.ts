import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/** The guides of docs/, served by the gateway itself as pages: offline, no script, public like /docs. */
describe('GET /docs/guide', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.close());

  const get = (url: string) => gw.app.inject({ method: 'GET', url });

  it('lists the guides and the reference pages by their titles', async () => {
    const index = await get('/docs/guide/');
    assert.equal(index.statusCode, 200);
    assert.match(String(index.headers['content-type']), /text\/html/);
    assert.match(index.body, /<a href="finality\.md">Finality and reorgs<\/a>/);
    assert.match(index.body, /<a href="reference\/configuration\.md">/);
    assert.equal((await get('/docs/guide')).statusCode, 200, 'with or without the slash');
  });

  it('renders a guide and a reference page, with a policy that runs no script', async () => {
    const finality = await get('/docs/guide/finality.md');
    assert.equal(finality.statusCode, 200);
    assert.match(finality.body, /<h1[^>]*>Finality and reorgs<\/h1>/);
    assert.match(finality.body, /<table>/);
    const csp = String(finality.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.doesNotMatch(csp, /script-src/);
    assert.doesNotMatch(finality.body, /<script/);
    const reference = await get('/docs/guide/reference/errors.md');
    assert.equal(reference.statusCode, 200);
    assert.match(reference.body, /PAYMENT_VERIFICATION_FAILED/);
  });

  it('answers 404 with the error body for an unknown guide or a path that walks elsewhere', async () => {
    for (const url of [
      '/docs/guide/nope.md',
      '/docs/guide/..%2Fpackage.json',
      '/docs/guide/%2e%2e%2fREADME',
      '/docs/guide/reference/..%2F..%2Fpackage',
      '/docs/guide/FINALITY.md',
    ]) {
      const res = await get(url);
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.json().error.code, 'NOT_FOUND', url);
    }
  });
});
