import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { PaymentProofs } from '../../../src/services/payments/proofs/payment-proof.ts';
import { decodeX402Header, MAX_X402_HEADER_LENGTH } from '../../../src/x402/payment-header.ts';

const base64 = (value: unknown, space?: number) =>
  Buffer.from(JSON.stringify(value, null, space)).toString('base64');

describe('x402 payment header values (X-PAYMENT, PAYMENT-SIGNATURE)', () => {
  const v1 = { x402Version: 1, scheme: 'exact', network: 'solana-devnet', payload: { transaction: 'AQ==' } };
  const v2 = {
    x402Version: 2,
    accepted: { scheme: 'exact', network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1' },
    payload: { transaction: 'AQ==' },
  };

  it('decodes v1 and v2 payloads, compact or pretty-printed, with surrounding whitespace', () => {
    assert.equal(decodeX402Header(base64(v1))?.x402Version, 1);
    assert.equal(decodeX402Header(base64(v2))?.x402Version, 2);
    assert.equal(decodeX402Header(` ${base64(v2, 2)}\n`)?.x402Version, 2);
  });

  it('decodes a payload whose extra nests a few levels; not one nesting thousands of levels deep', () => {
    const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
    const withExtra = (extra: string) =>
      Buffer.from(
        `{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:8453","extra":${extra}},"payload":{}}`,
      ).toString('base64');
    assert.equal(decodeX402Header(withExtra(nested(10)))?.x402Version, 2);
    // It fits in a header, but could not be forwarded to a facilitator: JSON.stringify runs out of stack.
    const deep = withExtra(`[${'['.repeat(5000)}${']'.repeat(5000)}]`);
    assert.ok(deep.length < MAX_X402_HEADER_LENGTH);
    assert.equal(decodeX402Header(deep), undefined);
  });

  it('leaves a gate402 proof and anything else that is not a base64 JSON payload alone', () => {
    const proof = new PaymentProofs(randomBytes(32)).issue({
      pid: 'pay_01JD0Q3ZK8M4F6X3V5N7R9T2AB',
      net: 'solana:localnet',
      sig: '5'.repeat(88),
      from: 'a',
      to: 'b',
      amt: '1',
      iat: 1,
    });
    for (const other of [
      proof,
      '',
      'e',
      'eyJ',
      base64([v2]),
      base64('text'),
      base64({ ...v2, x402Version: 3 }),
      base64({ ...v2, accepted: [v2.accepted] }),
      // Requirements that are not strings where x402's are (an object that cannot even be printed).
      ...['scheme', 'network', 'asset', 'payTo', 'amount'].flatMap((field) =>
        [5, ['exact'], { toString: 1 }].map((value) =>
          base64({ ...v2, accepted: { ...v2.accepted, [field]: value } }),
        ),
      ),
    ]) {
      assert.equal(decodeX402Header(other), undefined, other.slice(0, 20));
    }
  });
});
