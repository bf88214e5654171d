import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { callAs } from '../../support/api-caller.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/** Review of #30: GET /payment/export's date parameters. */
describe('review-30: payment export ranges', () => {
  let gw: TestGateway;
  let key: string;
  before(async () => {
    gw = await startTestGateway();
    key = (await gw.newCaller('premium')).key;
  });
  after(() => gw.close());

  it('refuses a date-time on a day that does not exist, naming the field, as it refuses such a date', async () => {
    for (const [field, value] of [
      ['from', '2026-02-30T00:00Z'],
      ['to', '2026-04-31T12:00:00+02:00'],
      ['from', '2026-02-30'],
    ] as const) {
      const res = await callAs(
        gw,
        key,
        'GET',
        `/payment/export?format=csv&${field}=${encodeURIComponent(value)}`,
      );
      assert.equal(res.status, 400, `${field}=${value}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error.code, 'INVALID_PARAMETERS');
      assert.match(res.body.error.details[field], /no such time/);
    }
    const fine = await gw.app.inject({
      method: 'GET',
      url: '/payment/export?format=csv&from=2024-02-29T23:59Z',
      headers: bearer(key),
    });
    assert.equal(fine.statusCode, 200, fine.body);
  });
});
