import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/domain/gateway-error.ts';
import { SendAmountBounds } from '../../src/services/payments/send-amount-bounds.ts';

const SOL = { symbol: 'SOL', address: null, decimals: 9 };
const USDC = { symbol: 'USDC', address: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', decimals: 6 };
const UNLISTED = { symbol: null, address: 'So11111111111111111111111111111111111111112', decimals: 9 };

/** The details of the INVALID_PARAMETERS `work` throws. */
function refusal(work: () => unknown): Record<string, unknown> {
  try {
    work();
  } catch (error) {
    assert.ok(error instanceof GatewayError);
    assert.equal(error.code, 'INVALID_PARAMETERS');
    return error.details as Record<string, unknown>;
  }
  assert.fail('not refused');
}

describe('the bounds of one send, per asset', () => {
  const bounds = new SendAmountBounds();

  it('keeps the spec’s 0.001 to 100 for the native currency, exactly at both ends', () => {
    assert.equal(bounds.atomicAmount(0.001, SOL), 1_000_000n);
    assert.equal(bounds.atomicAmount(100, SOL), 100_000_000_000n);
    assert.deepEqual(
      refusal(() => bounds.atomicAmount(0.000999999, SOL)),
      {
        amount: 'must be between 0.001 and 100',
      },
    );
    assert.deepEqual(
      refusal(() => bounds.atomicAmount(100.000000001, SOL)),
      {
        amount: 'must be between 0.001 and 100',
      },
    );
  });

  it('reads a token in its own decimals, with its own bounds, named by symbol or address in any case', () => {
    assert.equal(bounds.atomicAmount(100_000, USDC), 100_000_000_000n);
    assert.deepEqual(
      refusal(() => bounds.atomicAmount(100_000.000001, USDC)),
      {
        amount: 'must be between 0.001 and 100000 USDC',
      },
    );
    assert.deepEqual(
      refusal(() => bounds.atomicAmount(0.0000001, USDC)),
      {
        amount: 'has more than 6 decimal places (USDC has 6 decimals)',
      },
    );
    const byAddress = new SendAmountBounds({ [USDC.address.toLowerCase()]: ['1', '2'], usdc: ['5', '6'] });
    // The address wins over the symbol, whatever case it was configured in.
    assert.equal(byAddress.atomicAmount(2, USDC), 2_000_000n);
    assert.deepEqual(
      refusal(() => byAddress.atomicAmount(5, USDC)),
      {
        amount: 'must be between 1 and 2 USDC',
      },
    );
  });

  it('lets a token no entry names move from one atomic unit to a billion whole units', () => {
    assert.equal(bounds.atomicAmount(0.000000001, UNLISTED), 1n);
    assert.equal(bounds.atomicAmount(1_000_000_000, UNLISTED), 10n ** 18n);
    assert.deepEqual(
      refusal(() => bounds.atomicAmount(0, UNLISTED)),
      {
        amount: `must be between 0.000000001 and 1000000000 of ${UNLISTED.address}`,
      },
    );
  });
});
