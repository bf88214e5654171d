import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { atomicToDecimalText, decimalTextToAtomic, toAtomic, toWholeUnits } from '../../src/domain/money.ts';

describe('money: whole units and atomic units', () => {
  it('writes atomic units as exact decimal text, without trailing zeros', () => {
    const cases: [bigint, number, string][] = [
      [1_500_000_000n, 9, '1.5'],
      [1_000_000_000n, 9, '1'],
      [0n, 9, '0'],
      [0n, 0, '0'],
      [10n, 0, '10'],
      [1n, 6, '0.000001'],
      [1_000_001n, 6, '1.000001'],
      [100_000n, 6, '0.1'],
      [-2_500_000n, 6, '-2.5'],
      [
        2n ** 256n - 1n,
        18,
        '115792089237316195423570985008687907853269984665640564039457.584007913129639935',
      ],
    ];
    for (const [atomic, decimals, text] of cases) {
      assert.equal(atomicToDecimalText(atomic, decimals), text, `${atomic} with ${decimals} decimals`);
    }
    assert.equal(toWholeUnits(123_456_789n, 6), 123.456789);
  });

  it('reads decimal text and numbers into atomic units exactly, trailing zeros or not', () => {
    assert.equal(decimalTextToAtomic('1.50000', 9), 1_500_000_000n);
    assert.equal(decimalTextToAtomic('0.000001000', 6), 1n);
    assert.equal(decimalTextToAtomic('7', 6), 7_000_000n);
    assert.equal(toAtomic(0.1, 9), 100_000_000n);
    assert.throws(() => decimalTextToAtomic('0.0000001', 6), /more than 6 decimal places/);
    assert.throws(() => decimalTextToAtomic('7.', 6), /not a decimal amount/);
  });

  it('takes time linear in the length of the digits (a /0+$/ regex was quadratic)', () => {
    // 200,000 digits, a run of zeros then a 1: the regex's worst case, about 25 s (80,000 took 4 s).
    const digits = 200_000;
    const started = performance.now();
    assert.equal(atomicToDecimalText(1n, digits), `0.${'0'.repeat(digits - 1)}1`);
    assert.equal(atomicToDecimalText(10n ** BigInt(digits), digits), '1');
    assert.equal(decimalTextToAtomic(`0.${'0'.repeat(digits - 1)}1`, digits), 1n);
    assert.equal(decimalTextToAtomic(`1.${'0'.repeat(digits)}`, 6), 1_000_000n);
    const took = performance.now() - started;
    assert.ok(took < 5_000, `took ${Math.round(took)} ms`);
  });
});
