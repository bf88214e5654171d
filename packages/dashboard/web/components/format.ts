/** Dates as the reader's locale writes them; `never` for a missing time. */
export function formatTime(ms: number | null): string {
  return ms === null ? 'never' : new Date(ms).toLocaleString();
}

/** Long addresses and signatures shortened for tables; the full value stays in the title and detail view. */
export function shorten(value: string, keep = 6): string {
  return value.length <= keep * 2 + 1 ? value : `${value.slice(0, keep)}…${value.slice(-keep)}`;
}

/**
 * An exact token amount (atomic units as decimal text) in whole units, grouped as the reader's locale
 * groups thousands, with every significant decimal and no float rounding: 12345678 with 6 decimals is
 * "12.345678", 100000000000 is "100,000" (en). `formatDecimal` with room for every decimal: nothing
 * to round.
 */
export function formatTokenAmount(atomic: string, decimals: number): string {
  return formatDecimal(atomicToDecimal(atomic, decimals), decimals);
}

/**
 * An exact amount (whole units as decimal text, e.g. '0.123456789') shown with sensible decimals: at
 * most `maxFraction` of them, rounded half up on the digits (never through a float), thousands grouped
 * as the reader's locale groups them. Show the exact text beside it (a title) where it matters.
 */
export function formatDecimal(text: string, maxFraction = 6): string {
  const negative = text.startsWith('-');
  const [wholePart = '0', fractionPart = ''] = (negative ? text.slice(1) : text).split('.');
  let whole = BigInt(wholePart === '' ? '0' : wholePart);
  let kept = fractionPart.slice(0, maxFraction);
  if ((fractionPart.charCodeAt(maxFraction) || 0) >= 53 /* '5' */) {
    const scale = 10n ** BigInt(kept.length);
    const bumped = (kept === '' ? 0n : BigInt(kept)) + 1n;
    if (bumped >= scale) {
      whole += 1n;
      kept = '';
    } else {
      kept = bumped.toString().padStart(kept.length, '0');
    }
  }
  kept = kept.replace(/0+$/, '');
  const point = (1.5).toLocaleString().charAt(1);
  const shown = kept === '' ? whole.toLocaleString() : `${whole.toLocaleString()}${point}${kept}`;
  return negative && shown !== '0' ? `-${shown}` : shown;
}

/** Atomic units (decimal text) as exact whole units in plain decimal text: '1500000', 6 → '1.5'. */
export function atomicToDecimal(atomic: string, decimals: number): string {
  const digits = atomic.replace(/^0+(?=\d)/, '').padStart(decimals + 1, '0');
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  const whole = digits.slice(0, digits.length - decimals);
  return fraction === '' ? whole : `${whole}.${fraction}`;
}

/** An amount with its asset: the symbol, else the asset's address shortened, else the fallback. */
export function formatMoney(
  text: string,
  symbol: string | null,
  asset: string | null,
  fallback = '',
): string {
  const unit = symbol ?? (asset === null ? fallback : shorten(asset, 4));
  return unit === '' ? formatDecimal(text) : `${formatDecimal(text)} ${unit}`;
}
