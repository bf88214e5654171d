import type { EventRecord } from '../domain/records/event-records.ts';
import type { Store } from '../store/store.ts';
import type { EventSignal } from './event-signal.ts';

/** Receives the events of one account, in seq order, as this instance reads them from the outbox. */
export type AccountListener = (event: EventRecord) => void;

export interface EventHubOptions {
  readonly store: Store;
  readonly signal: EventSignal;
  /** How often the outbox is read when no signal arrived (a lost Redis message, SQLite shared by processes). */
  readonly pollIntervalMs: number;
  readonly log?: (message: string, error: unknown) => void;
}

const PAGE = 500;

/**
 * One reader of the outbox per instance, fanning events out to this instance's subscribers by account.
 *
 * `position` is the highest seq read and dispatched. Because seqs become visible in commit order (see
 * EventRepository), reading "after position" page by page never skips an event, and a subscriber that
 * registers at position P receives exactly the events after P. A commit on this instance hands over
 * the events it appended (dispatched as they are when they are the next ones, else read); the hub
 * reads when the signal says another instance appended, and every `pollIntervalMs`; reads never
 * overlap, and a wake-up during a read causes one more read after it.
 */
export class EventHub {
  private readonly listeners = new Map<string, Set<AccountListener>>();
  private readonly advanceListeners = new Set<() => void>();
  private currentPosition = 0;
  private reading: Promise<void> | undefined;
  private readAgain = false;
  /** Events committed by this process and not dispatched yet, in the order they were handed over. */
  private committed: EventRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly unsubscribers: (() => void)[] = [];
  private started = false;

  constructor(private readonly options: EventHubOptions) {}

  /** The highest seq this instance has read and dispatched. */
  get position(): number {
    return this.currentPosition;
  }

  get store(): Store {
    return this.options.store;
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.currentPosition = await this.options.store.events.lastSeq();
    this.unsubscribers.push(
      this.options.store.onEventsCommitted((events) => {
        this.options.signal.publish();
        this.committedHere(events);
      }),
      this.options.signal.subscribe(() => this.wake()),
    );
    this.timer = setInterval(() => this.wake(), this.options.pollIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    await this.reading;
    this.listeners.clear();
    this.advanceListeners.clear();
    this.committed = [];
    this.started = false;
  }

  /** Calls `listener` with each of the account's events read after now; returns the unsubscribe function. */
  subscribe(accountId: string, listener: AccountListener): () => void {
    let set = this.listeners.get(accountId);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(accountId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(accountId) === set) this.listeners.delete(accountId);
    };
  }

  /** How many connections of the account listen on this instance (for tests and metrics). */
  subscriberCount(accountId: string): number {
    return this.listeners.get(accountId)?.size ?? 0;
  }

  /** Calls `listener` whenever the position moved (the webhook fan-out wakes on it). */
  onAdvance(listener: () => void): () => void {
    this.advanceListeners.add(listener);
    return () => this.advanceListeners.delete(listener);
  }

  /** Reads the outbox now (or once more after the read in progress). */
  wake(): void {
    if (!this.started) return;
    if (this.reading !== undefined) {
      this.readAgain = true;
      return;
    }
    this.reading = this.readAll().finally(() => {
      this.reading = undefined;
      if (this.readAgain) {
        this.readAgain = false;
        this.wake();
      } else if (this.committed.length > 0) {
        this.dispatchCommitted();
      }
    });
  }

  /** Events a commit of this process appended, durable by now: see dispatchCommitted. */
  private committedHere(events: readonly EventRecord[]): void {
    if (!this.started) return;
    this.committed.push(...events);
    // During a read they wait for it: it may dispatch them, or events before them.
    if (this.reading === undefined) this.dispatchCommitted();
  }

  /**
   * Dispatches this process's committed events as they are, instead of reading them back (a read, a
   * JSON parse and a flush of the log per commit), as long as each is the very next seq: nothing can
   * come before it then, since seqs become visible in commit order. Those a read already dispatched are
   * dropped; at a gap (another instance's events, a rolled-back seq) the outbox is read instead.
   */
  private dispatchCommitted(): void {
    const events = this.committed.sort((a, b) => a.seq - b.seq);
    this.committed = [];
    const before = this.currentPosition;
    for (const event of events) {
      if (event.seq <= this.currentPosition) continue;
      if (event.seq !== this.currentPosition + 1) {
        this.wake();
        break;
      }
      this.dispatchEvent(event);
    }
    if (this.currentPosition !== before) for (const listener of this.advanceListeners) listener();
  }

  private async readAll(): Promise<void> {
    try {
      let advanced = false;
      for (;;) {
        const events = await this.options.store.events.listAllAfter(this.currentPosition, PAGE);
        // Nothing is pushed to a client that a power loss could still take back.
        if (events.length > 0) await this.options.store.durable();
        for (const event of events) this.dispatchEvent(event);
        if (events.length > 0) advanced = true;
        if (events.length < PAGE) break;
      }
      if (advanced) for (const listener of this.advanceListeners) listener();
    } catch (error) {
      // Storage unavailable: the next wake-up or poll reads from the same position again.
      this.options.log?.('reading the event outbox failed', error);
    }
  }

  /** Moves the position to `event` and hands it to its account's listeners. */
  private dispatchEvent(event: EventRecord): void {
    this.currentPosition = event.seq;
    const set = this.listeners.get(event.accountId);
    if (set !== undefined) for (const listener of [...set]) this.dispatch(listener, event);
  }

  private dispatch(listener: AccountListener, event: EventRecord): void {
    try {
      listener(event);
    } catch (error) {
      this.options.log?.('an event listener failed', error);
    }
  }
}
