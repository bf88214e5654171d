import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePaymentRequest, resourceUrl } from '../../src/x402/payment-request.ts';

describe('x402 payment requests: the resource a payment records', () => {
  it('keeps an absolute URL within 2,048 characters, and nothing else a payload may put there', () => {
    assert.equal(resourceUrl('https://shop.example/report?q=1'), 'https://shop.example/report?q=1');
    for (const odd of [
      undefined,
      42,
      { url: 'https://shop.example/r' },
      '',
      '/report',
      'not a url',
      'https://shop.example/\u0000',
      'https://shop.example/a\nb',
      `https://shop.example/${'x'.repeat(2_048)}`,
    ]) {
      assert.equal(resourceUrl(odd), undefined, JSON.stringify(odd));
    }
  });

  it('reads it from a v2 payload’s resource.url and from v1 requirements, and leaves out one it would not keep', () => {
    const requirements = { scheme: 'exact', network: 'eip155:8453', asset: '0xA', payTo: '0xB' };
    const v2 = (resource: unknown) =>
      parsePaymentRequest(
        { x402Version: 2, accepted: requirements, payload: {}, resource },
        { ...requirements, amount: '1' },
      );
    const v1 = (resource: unknown) =>
      parsePaymentRequest(
        { x402Version: 1, scheme: 'exact', network: 'eip155:8453', payload: {} },
        { ...requirements, maxAmountRequired: '1', resource },
      );
    const resourceOf = (parsed: ReturnType<typeof parsePaymentRequest>) =>
      parsed.ok ? parsed.payment.resource : `refused: ${parsed.reason}`;
    assert.equal(resourceOf(v2({ url: 'https://shop.example/r' })), 'https://shop.example/r');
    assert.equal(resourceOf(v1('https://shop.example/v1')), 'https://shop.example/v1');
    assert.equal(resourceOf(v2({ url: 'https://shop.example/\u0000' })), undefined);
    assert.equal(resourceOf(v2(undefined)), undefined);
    assert.equal(resourceOf(v1('')), undefined);
  });
});
