/** The longest wait between two attempts of one delivery. */
export const MAX_RETRY_DELAY_MS = 3_600_000;

/**
 * When to try a failed delivery again: `baseMs` after the first attempt, doubling after each, at most an
 * hour; undefined once the delivery is older than `retryForMs` (it is then marked failed, and can still
 * be redelivered by hand). With the defaults (5 s, 24 h) that is about 30 attempts.
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
  return now + delay;
}
