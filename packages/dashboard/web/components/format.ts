/** Dates as the reader's locale writes them; `never` for a missing time. */
export function formatTime(ms: number | null): string {
  return ms === null ? 'never' : new Date(ms).toLocaleString();
}

/** Long addresses and signatures shortened for tables; the full value stays in the title and detail view. */
export function shorten(value: string, keep = 6): string {
  return value.length <= keep * 2 + 1 ? value : `${value.slice(0, keep)}…${value.slice(-keep)}`;
}
