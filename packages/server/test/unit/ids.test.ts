import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../src/domain/ids.ts';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** Reads base32 text as a number, independently of the encoder under test. */
function decode(text: string): bigint {
  let value = 0n;
  for (const char of text) value = value * 32n + BigInt(CROCKFORD.indexOf(char));
  return value;
}

describe('ids', () => {
  it('is the prefix, 10 characters of milliseconds and 16 of randomness, in Crockford base32', () => {
    const at = Date.UTC(2026, 10, 27, 9, 50) + Math.floor(Math.random() * 1_000_000);
    const id = newId('pay', at);
    assert.match(id, /^pay_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(decode(id.slice(4, 14)), BigInt(at));
    assert.ok(decode(id.slice(14)) < 2n ** 80n);
  });

  it('counts up by one within a millisecond, across the random part’s two halves', () => {
    const at = Date.now() + 10_000_000;
    const ids = Array.from({ length: 3_000 }, () => newId('evt', at));
    for (let i = 1; i < ids.length; i++) {
      const [before, after] = [decode(ids[i - 1]?.slice(4) ?? ''), decode(ids[i]?.slice(4) ?? '')];
      assert.equal(after - before, 1n, `${ids[i - 1]} then ${ids[i]}`);
    }
  });

  it('sorts in creation order and never repeats, new random bits each millisecond', () => {
    const start = Date.now() + 20_000_000;
    const ids = Array.from({ length: 5_000 }, (_, i) => newId('evt', start + Math.floor(i / 3)));
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
    const randomParts = new Set(ids.filter((_, i) => i % 3 === 0).map((id) => id.slice(14)));
    assert.equal(randomParts.size, Math.ceil(ids.length / 3), 'each millisecond draws its own bits');
  });
});
