/** The longest wait between two attempts of one delivery. */
export const MAX_RETRY_DELAY_MS = 3_600_000;

/**
 * When to try a failed delivery again: `baseMs` after the first attempt, doubling after each, at most an
 * hour, and never later than `retryForMs` after the delivery was created: the last attempt is made then,
 * so a delivery is retried for `retryForMs` and not up to an hour longer. Undefined once the delivery is
 * that old (it is then marked failed, and can still be redelivered by hand). With the defaults (5 s,
 * 24 h) that is 34 attempts. `retryAfterMs`: the endpoint asked for that long a wait (Retry-After, on a
 * 429 or 503), which is kept when it is longer than the schedule's, up to an hour.
 */
export function nextAttemptAt(
  attempts: number,
  createdAt: number,
  now: number,
  baseMs: number,
  retryForMs: number,
  retryAfterMs?: number,
): number | undefined {
  if (now - createdAt >= retryForMs) return undefined;
  const scheduled = baseMs * 2 ** Math.max(0, attempts - 1);
  const delay = Math.min(Math.max(scheduled, retryAfterMs ?? 0), MAX_RETRY_DELAY_MS);
  return Math.min(now + delay, createdAt + retryForMs);
}

/**
 * The wait a Retry-After header value asks for (RFC 9110 §10.2.3: whole seconds, or an HTTP date), in ms
 * from `now`; undefined when there is none or it cannot be read.
 */
export function retryAfterMs(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  // Only the IMF-fixdate form senders must use ("Sun, 06 Nov 1994 08:49:37 GMT"), not whatever Date parses.
  if (!/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
