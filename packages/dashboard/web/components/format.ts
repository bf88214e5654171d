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
 * "12.345678", 100000000000 is "100,000" (en).
 */
export function formatTokenAmount(atomic: string, decimals: number): string {
  const digits = atomic.replace(/^0+(?=\d)/, '').padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  const grouped = BigInt(whole).toLocaleString();
  const point = (1.5).toLocaleString().charAt(1);
  return fraction === '' ? grouped : `${grouped}${point}${fraction}`;
}
