/** The longest wait between two attempts of one delivery. */
export const MAX_RETRY_DELAY_MS = 3_600_000;

/**
 * When to try a failed delivery again: `baseMs` after the first attempt, doubling after each, at most an
 * hour, and never later than `retryForMs` after the delivery was created: the last attempt is made then,
 * so a delivery is retried for `retryForMs` and not up to an hour longer. Undefined once the delivery is
 * that old (it is then marked failed, and can still be redelivered by hand). With the defaults (5 s,
 * 24 h) that is 34 attempts.
 */
export function nextAttemptAt(
  attempts: number,
  createdAt: number,
  now: number,
  baseMs: number,
  retryForMs: number,
): number | undefined {
  if (now - createdAt >= retryForMs) return undefined;
  const delay = Math.min(baseMs * 2 ** Math.max(0, attempts - 1), MAX_RETRY_DELAY_MS);
  return Math.min(now + delay, createdAt + retryForMs);
}
