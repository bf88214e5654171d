import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { atomicToDecimal, formatDecimal, formatTokenAmount } from '../../web/components/format.ts';

// The dashboard's amount formatting: exact digits, never through a float. Node's default locale here
// writes thousands with "," and the decimal point as ".", as the page's English readers see them.
describe('dashboard amount formatting', () => {
  it('writes atomic units as exact whole units', () => {
    assert.equal(atomicToDecimal('1500000', 6), '1.5');
    assert.equal(atomicToDecimal('1', 18), '0.000000000000000001');
    assert.equal(atomicToDecimal('000120', 2), '1.2');
    assert.equal(atomicToDecimal('0', 9), '0');
    assert.equal(atomicToDecimal('42', 0), '42');
  });

  it('shows a token amount grouped, with every significant decimal', () => {
    assert.equal(formatTokenAmount('12345678', 6), '12.345678');
    assert.equal(formatTokenAmount('100000000000', 6), '100,000');
    assert.equal(formatTokenAmount('123456789012345678901', 18), '123.456789012345678901');
    assert.equal(formatTokenAmount('1', 9), '0.000000001');
    assert.equal(formatTokenAmount('0', 6), '0');
    assert.equal(formatTokenAmount('1234567', 0), '1,234,567');
  });

  it('rounds a long amount half up on its digits for the screen', () => {
    assert.equal(formatDecimal('0.2234567'), '0.223457');
    assert.equal(formatDecimal('0.9999995'), '1');
    assert.equal(formatDecimal('1234.5'), '1,234.5');
    assert.equal(formatDecimal('-0.0000001'), '0');
  });
});
