/**
 * Concurrent identical reads share one RPC request: a caller that asks while the same read is on the
 * wire gets that read's answer instead of sending another. Nothing is kept once the answer arrives, so
 * every answer was fetched after the caller asked or while it was asking — never a stale cached value.
 * For reads whose answer may be a few milliseconds old anyway (a recent blockhash, a balance checked
 * before a send that the chain checks again), this turns a burst of N sends into one read instead of N.
 */
export class InFlightReads {
  private readonly reads = new Map<string, Promise<unknown>>();

  share<T>(key: string, read: () => Promise<T>): Promise<T> {
    const pending = this.reads.get(key);
    if (pending !== undefined) return pending as Promise<T>;
    const started = read().finally(() => this.reads.delete(key));
    this.reads.set(key, started);
    return started;
  }
}
