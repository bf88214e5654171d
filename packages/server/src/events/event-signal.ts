/**
 * Wakes outbox readers when events were committed somewhere. A signal carries no events: the outbox is
 * the source of truth, and a reader that is woken reads it from its own position. A lost or repeated
 * signal therefore costs at most a poll interval or an empty read, never an event.
 */
export interface EventSignal {
  /**
   * Tells every other instance that events were committed. Not this one: its commits hand their events
   * to its hub directly (Store.onEventsCommitted).
   */
  publish(): void;
  /** Calls `listener` on every signal; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
  close(): Promise<void>;
}

/**
 * No signal across processes: there is no other instance to tell. Other processes on the same SQLite
 * file (a second instance, the CLI) are found by the hub's poll.
 */
export class SingleInstanceEventSignal implements EventSignal {
  publish(): void {}

  subscribe(_listener: () => void): () => void {
    return () => {};
  }

  async close(): Promise<void> {}
}
