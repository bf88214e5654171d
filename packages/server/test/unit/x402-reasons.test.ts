import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isX402Reason, X402_REASONS } from '../../src/domain/x402-reasons.ts';

describe('the x402 reason catalogue', () => {
  it('lists each code once, in x402 snake_case', () => {
    assert.equal(new Set(X402_REASONS).size, X402_REASONS.length);
    for (const reason of X402_REASONS) assert.match(reason, /^[a-z][a-z0-9_]*[a-z0-9]$/, reason);
  });

  it('tells a listed code from any other text', () => {
    assert.equal(isX402Reason('permit2_allowance_required'), true);
    assert.equal(isX402Reason('Permit2_allowance_required'), false);
    assert.equal(isX402Reason('invalid'), false);
    assert.equal(isX402Reason(42), false);
  });
});
