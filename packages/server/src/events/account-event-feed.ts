import type { EventRecord } from '../domain/records/event-records.ts';
import type { EventHub } from './event-hub.ts';

const REPLAY_PAGE = 200;

/** Where a feed's events go: one connection of some transport (a WebSocket, a Server-Sent Events response). */
export interface EventFeedSink {
  /** Called once per event after the feed's starting point, in seq order. */
  deliver(event: EventRecord): void;
  /**
   * Resolves once the consumer has read enough of what was delivered for a replay to go on (at once when
   * little waits unsent: a replay asks after every event); resolves false when it gave up on the
   * consumer (the sink then closes itself).
   */
  drained(): Promise<boolean>;
}

/**
 * The events of one account from a starting point on, for one connection: a replay from the outbox, then
 * live from the EventHub, each event once, in order, with no gap at the switch.
 *
 * `cursor` is the seq of the last event handed to the sink. Live events are handed on only in `live`
 * mode and only when newer than the cursor. A replay (`since`) reads the account's events after the
 * cursor page by page; once a read returns less than a page it moves the cursor to the hub position taken
 * *before* that read (every event up to there was committed before the read, so the read saw them) and
 * switches to live when the hub has not moved past the cursor meanwhile, else reads again. So every event
 * after `since` is handed on once: by the replay up to the switch, by the hub after it, never by both
 * (the cursor check), never by neither (the hub position check). Nothing is buffered during a replay,
 * so memory stays bounded however long it is.
 */
export class AccountEventFeed {
  private cursor: number;
  private mode: 'live' | 'replaying' = 'live';
  /** Bumped by each replay, so an older one stops. */
  private replayGeneration = 0;
  private readonly unsubscribe: () => void;
  private closed = false;

  /** Starts live at the hub's current position: the events the hub reads from now on. */
  constructor(
    private readonly hub: EventHub,
    private readonly accountId: string,
    private readonly sink: EventFeedSink,
  ) {
    this.cursor = hub.position;
    this.unsubscribe = hub.subscribe(accountId, (event) => this.onLiveEvent(event));
  }

  /**
   * Hands on the account's events after `sinceSeq` (from the outbox), then goes on live. Rejects when the
   * outbox cannot be read; the connection should then close and let its client resume from its last event.
   */
  async replayAfter(sinceSeq: number): Promise<void> {
    this.cursor = sinceSeq;
    this.mode = 'replaying';
    const generation = ++this.replayGeneration;
    const events = this.hub.store.events;
    for (;;) {
      const horizon = this.hub.position;
      const page = await events.listAfter(this.accountId, this.cursor, REPLAY_PAGE);
      // As the hub does: no event reaches a client before it is on disk.
      if (page.length > 0) await this.hub.store.durable();
      if (this.closed || generation !== this.replayGeneration) return;
      for (const event of page) {
        this.cursor = event.seq;
        this.sink.deliver(event);
        // Paced event by event, not page by page: a page of events with large metadata is about a
        // megabyte, and handed on at once to a client that reads slowly but steadily it went over the
        // sink's limit (4008) although the client kept reading.
        if (!(await this.sink.drained())) return;
        if (this.closed || generation !== this.replayGeneration) return;
      }
      if (page.length === REPLAY_PAGE) continue;
      this.cursor = Math.max(this.cursor, horizon);
      if (this.cursor >= this.hub.position) {
        this.mode = 'live';
        return;
      }
    }
  }

  /** Stops handing on events; idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.replayGeneration++;
    this.unsubscribe();
  }

  private onLiveEvent(event: EventRecord): void {
    if (this.closed || this.mode !== 'live' || event.seq <= this.cursor) return;
    this.cursor = event.seq;
    this.sink.deliver(event);
  }
}
