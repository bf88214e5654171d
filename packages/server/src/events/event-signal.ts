/**
 * Wakes outbox readers when events were committed somewhere. A signal carries no events: the outbox is
 * the source of truth, and a reader that is woken reads it from its own position. A lost or repeated
 * signal therefore costs at most a poll interval or an empty read, never an event.
 */
export interface EventSignal {
  /** Tells every instance (this one included) that events were committed. */
  publish(): void;
  /** Calls `listener` on every signal; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
  close(): Promise<void>;
}

/** One process: the signal is a function call. */
export class InProcessEventSignal implements EventSignal {
  private readonly listeners = new Set<() => void>();

  publish(): void {
    for (const listener of this.listeners) listener();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}
