/**
 * Exact conversions between decimal amounts (what people and the gateway's JSON use: 0.01 SOL) and
 * atomic units (what x402 puts on the wire: "10000000" lamports). No float arithmetic: a decimal is
 * handled as its digits.
 */

const DECIMAL = /^(\d+)(?:\.(\d*))?(?:e([+-]?\d+))?$/i;

/**
 * `amount` (a decimal string or a number, in whole units) as atomic units; refuses what it cannot hold
 * exactly, or with `rounding: 'down'` drops the digits past `decimals` (for a limit: any whole number of
 * atomic units is at most `amount` exactly when it is at most the rounded-down result).
 */
export function toAtomicUnits(
  amount: string | number,
  decimals: number,
  rounding: 'exact' | 'down' = 'exact',
): bigint {
  const text = typeof amount === 'number' ? numberText(amount) : amount.trim();
  const match = DECIMAL.exec(text);
  if (match === null) throw new RangeError(`"${text}" is not a non-negative decimal amount`);
  const [, whole = '', fraction = '', exponent = '0'] = match;
  let digits = whole + fraction;
  // The point sits after `pointAt` digits; scaling to atomic units moves it `decimals` further right.
  const pointAt = whole.length + Number(exponent) + decimals;
  if (pointAt < 0) digits = '0';
  else if (pointAt >= digits.length) digits = digits.padEnd(pointAt, '0');
  else {
    if (rounding === 'exact' && /[^0]/.test(digits.slice(pointAt))) {
      throw new RangeError(`${text} has more than ${decimals} decimals`);
    }
    digits = digits.slice(0, pointAt);
  }
  return BigInt(digits === '' ? '0' : digits);
}

/** Atomic units as the shortest exact decimal string in whole units: 10000000n, 9 → "0.01". */
export function fromAtomicUnits(atomic: bigint, decimals: number): string {
  if (atomic < 0n) throw new RangeError('an amount is never negative');
  const digits = atomic.toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return fraction === '' ? whole : `${whole}.${fraction}`;
}

/**
 * A decimal string as the JSON number the gateway's API takes. The gateway refuses numbers a double
 * cannot hold as written, so neither does this: "0.1234567890123456789" is an error, not a rounding.
 */
export function toJsonNumber(decimal: string): number {
  const value = Number(decimal);
  if (!Number.isFinite(value) || toAtomicUnits(numberText(value), 30) !== toAtomicUnits(decimal, 30)) {
    throw new RangeError(`${decimal} cannot be sent as a JSON number without rounding`);
  }
  return value;
}

function numberText(value: number): string {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${value} is not a non-negative amount`);
  return String(value);
}
