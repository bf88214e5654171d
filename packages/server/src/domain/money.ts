/**
 * Amounts cross the API as JSON numbers in a currency's whole unit (SOL, ETH, USDC) and live inside as
 * bigint atomic units. Conversion goes through the number's shortest decimal text — the digits a
 * person wrote — and never through float multiplication, so 0.1 SOL is exactly 100,000,000 lamports.
 */
export class AmountError extends Error {
  override readonly name = 'AmountError';
}

/** Whole units (a JSON number) → atomic units. Throws AmountError for more decimals than the currency has. */
export function toAtomic(amount: number, decimals: number): bigint {
  if (!Number.isFinite(amount)) throw new AmountError('must be a finite number');
  if (amount < 0) throw new AmountError('must not be negative');
  return decimalTextToAtomic(plainDecimal(amount), decimals);
}

/** Decimal text such as "12.345" → atomic units, exactly. */
export function decimalTextToAtomic(text: string, decimals: number): bigint {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null) throw new AmountError(`"${text}" is not a decimal amount`);
  const whole = match[1] ?? '0';
  const fraction = withoutTrailingZeros(match[2] ?? '');
  if (fraction.length > decimals) throw new AmountError(`has more than ${decimals} decimal places`);
  return BigInt(whole) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
}

/** Atomic units → exact decimal text, e.g. 1500000000n with 9 decimals → "1.5". */
export function atomicToDecimalText(atomic: bigint, decimals: number): string {
  const negative = atomic < 0n;
  const digits = (negative ? -atomic : atomic).toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = withoutTrailingZeros(digits.slice(digits.length - decimals));
  return `${negative ? '-' : ''}${whole}${fraction === '' ? '' : `.${fraction}`}`;
}

/** Atomic units → the JSON number whose shortest text is the exact decimal (as close as a double gets). */
export function toWholeUnits(atomic: bigint, decimals: number): number {
  return Number(atomicToDecimalText(atomic, decimals));
}

/**
 * `digits` without its trailing zeros, in one pass from the end. Not `/0+$/`: a regular expression retries
 * the run of zeros from each of its positions when something else follows it, quadratic in its length
 * (80,000 zeros took 4 s).
 */
function withoutTrailingZeros(digits: string): string {
  let end = digits.length;
  while (end > 0 && digits.charCodeAt(end - 1) === 48 /* '0' */) end -= 1;
  return digits.slice(0, end);
}

/** The number's shortest round-trip text without exponent notation (1e-7 → "0.0000001"). */
function plainDecimal(value: number): string {
  const text = String(value);
  const exp = /^(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (exp === null) return text;
  const digits = (exp[1] ?? '') + (exp[2] ?? '');
  const exponent = Number(exp[3]);
  if (exponent < 0) return `0.${'0'.repeat(-exponent - 1)}${digits}`;
  return digits.padEnd(exponent + 1, '0');
}
