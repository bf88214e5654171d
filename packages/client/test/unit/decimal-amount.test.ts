import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromAtomicUnits, toAtomicUnits, toJsonNumber } from '../../src/decimal-amount.ts';

describe('decimal amounts ↔ atomic units, exactly', () => {
  it('converts decimals and numbers to atomic units without floats', () => {
    assert.equal(toAtomicUnits('0.01', 9), 10_000_000n);
    // 1.1 * 1e18 in floats is 1100000000000000128.
    assert.equal(toAtomicUnits(1.1, 18), 1_100_000_000_000_000_000n);
    assert.equal(toAtomicUnits(1e-7, 9), 100n);
    assert.equal(toAtomicUnits('1e2', 6), 100_000_000n);
    assert.equal(toAtomicUnits('100', 0), 100n);
    assert.equal(toAtomicUnits('0.000000001', 9), 1n);
  });

  it('refuses what it cannot hold exactly', () => {
    assert.throws(() => toAtomicUnits('0.0000000001', 9), /more than 9 decimals/);
    assert.throws(() => toAtomicUnits('-1', 9), /not a non-negative decimal/);
    assert.throws(() => toAtomicUnits(Number.NaN, 9), /not a non-negative amount/);
    assert.throws(() => toAtomicUnits('1,5', 9), /not a non-negative decimal/);
  });

  it('rounds down past the decimals when asked to, for a limit', () => {
    assert.equal(toAtomicUnits(0.1 + 0.2, 9, 'down'), 300_000_000n);
    assert.equal(toAtomicUnits('0.0000000019', 9, 'down'), 1n);
    assert.equal(toAtomicUnits('1.5e-10', 9, 'down'), 0n);
    assert.equal(toAtomicUnits('0.01', 9, 'down'), 10_000_000n);
    assert.throws(() => toAtomicUnits('-0.1', 9, 'down'), /not a non-negative decimal/);
  });

  it('answers the shortest exact decimal', () => {
    assert.equal(fromAtomicUnits(10_000_000n, 9), '0.01');
    assert.equal(fromAtomicUnits(0n, 9), '0');
    assert.equal(fromAtomicUnits(1_500_000_000_000_000_000n, 18), '1.5');
    assert.equal(fromAtomicUnits(1n, 18), '0.000000000000000001');
  });

  it('gives the gateway only JSON numbers that mean what was written', () => {
    assert.equal(toJsonNumber('0.01'), 0.01);
    assert.throws(() => toJsonNumber('0.1234567890123456789'), /without rounding/);
  });
});
