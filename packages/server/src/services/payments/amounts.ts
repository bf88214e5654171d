import { invalidParameters } from '../../domain/gateway-error.ts';
import { AmountError, toAtomic } from '../../domain/money.ts';

/** Whole units from a request field → atomic units, or INVALID_PARAMETERS naming the field. */
export function atomicFromField(field: string, amount: number, decimals: number, symbol: string): bigint {
  try {
    return toAtomic(amount, decimals);
  } catch (error) {
    if (error instanceof AmountError) {
      throw invalidParameters({ [field]: `${error.message} (${symbol} has ${decimals} decimals)` });
    }
    throw error;
  }
}
