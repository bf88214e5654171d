/**
 * Runs `work` with a signal that aborts when `cancel` does, or with a TimeoutError after `ms`.
 *
 * The deadline is a timer this call holds and clears, not `AbortSignal.any([cancel,
 * AbortSignal.timeout(ms)])`: Node (seen on 20.20) holds the sources of `any()` only weakly, so a full
 * GC can collect a timeout signal nothing else references, cancelling its timer — the wait then has no
 * deadline at all (a send hung forever so in payment-recovery.test.ts).
 */
export async function withDeadline<T>(
  ms: number,
  cancel: AbortSignal | undefined,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const deadline = new AbortController();
  const timer = setTimeout(
    () => deadline.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')),
    Math.max(1, ms),
  );
  const onCancel = () => deadline.abort(cancel?.reason);
  cancel?.addEventListener('abort', onCancel, { once: true });
  if (cancel?.aborted === true) deadline.abort(cancel.reason);
  try {
    return await work(deadline.signal);
  } finally {
    clearTimeout(timer);
    cancel?.removeEventListener('abort', onCancel);
  }
}
