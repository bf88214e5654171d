import type { WebSocket } from 'ws';
import type { EventHub } from '../events/event-hub.ts';
import { paymentEventMessage } from '../events/payment-event-message.ts';
import type { EventRecord } from '../store/store.ts';
import { STREAM_CLOSE } from './stream-close-codes.ts';
import { EVERYTHING, matches, type StreamFilter } from './stream-subscription.ts';

const REPLAY_PAGE = 200;
/** How long a replay waits for the client to read what it was sent before it counts as too slow. */
const REPLAY_DRAIN_TIMEOUT_MS = 30_000;

/**
 * One authenticated stream connection: what it subscribed to, and where it is in the outbox.
 *
 * `cursor` is the seq of the last event considered for this connection (sent or filtered out). Live
 * events from the hub are sent only in `live` mode and only when newer than the cursor. A replay
 * (`since`) reads the account's events after the cursor from the outbox page by page; once a read
 * returns less than a page it moves the cursor to the hub position taken *before* that read (every
 * event up to there was committed before the read, so the read saw them) and switches to live when the
 * hub has not moved past the cursor meanwhile, else reads again. So every event after `since` is sent
 * once, in order: by the replay up to the switch, by the hub after it, never by both (the cursor check),
 * never by neither (the hub position check). No live event is buffered during a replay, so memory stays
 * bounded however long the replay is.
 */
export class StreamConnection {
  private filter: StreamFilter = EVERYTHING;
  private cursor: number;
  private mode: 'live' | 'replaying' = 'live';
  /** Bumped by each subscribe with `since`, so an older replay stops. */
  private replayGeneration = 0;
  private readonly unsubscribe: () => void;
  private closed = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly accountId: string,
    private readonly hub: EventHub,
    private readonly maxBufferedBytes: number,
    private readonly log: (message: string, error: unknown) => void,
  ) {
    this.cursor = hub.position;
    this.unsubscribe = hub.subscribe(accountId, (event) => this.onLiveEvent(event));
    socket.once('close', () => this.dispose());
  }

  /** Replaces the filter; with `sinceSeq`, replays the account's events after it first. */
  subscribe(filter: StreamFilter, sinceSeq: number | undefined): void {
    this.filter = filter;
    if (sinceSeq === undefined) return;
    this.cursor = sinceSeq;
    this.mode = 'replaying';
    const generation = ++this.replayGeneration;
    this.replay(generation).catch((error) => {
      this.log('payment stream replay failed', error);
      this.close(STREAM_CLOSE.UNAVAILABLE, 'replay failed; reconnect with since');
    });
  }

  private onLiveEvent(event: EventRecord): void {
    if (this.mode !== 'live' || event.seq <= this.cursor) return;
    this.cursor = event.seq;
    if (matches(this.filter, event)) this.send(event);
  }

  private async replay(generation: number): Promise<void> {
    const events = this.hub.store.events;
    for (;;) {
      const horizon = this.hub.position;
      const page = await events.listAfter(this.accountId, this.cursor, REPLAY_PAGE);
      if (this.closed || generation !== this.replayGeneration) return;
      for (const event of page) {
        this.cursor = event.seq;
        if (matches(this.filter, event)) this.send(event);
      }
      if (page.length === REPLAY_PAGE) {
        await this.drained();
        continue;
      }
      this.cursor = Math.max(this.cursor, horizon);
      if (this.cursor >= this.hub.position) {
        this.mode = 'live';
        return;
      }
    }
  }

  /** Resolves once the client has read most of what was sent, so a replay never outruns it. */
  private async drained(): Promise<void> {
    const started = Date.now();
    while (!this.closed && this.socket.bufferedAmount > this.maxBufferedBytes / 2) {
      if (Date.now() - started > REPLAY_DRAIN_TIMEOUT_MS) {
        this.close(STREAM_CLOSE.TOO_SLOW, 'consumer too slow');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  private send(event: EventRecord): void {
    if (this.closed) return;
    this.socket.send(serialized(event));
    // The queue in front of the socket only grows when the client reads slower than events come: past
    // the limit the connection is closed (4008) instead of holding ever more memory for it. The client
    // reconnects with `since` = the last id it got and loses nothing.
    if (this.socket.bufferedAmount > this.maxBufferedBytes) {
      this.close(STREAM_CLOSE.TOO_SLOW, 'consumer too slow; reconnect with since');
    }
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.dispose();
    this.socket.close(code, reason);
    // A client that does not read cannot receive the close frame either: do not wait for it forever.
    setTimeout(() => this.socket.terminate(), 1_000).unref();
  }

  private dispose(): void {
    if (this.closed) return;
    this.closed = true;
    this.replayGeneration++;
    this.unsubscribe();
  }
}

/** Each event's text, made once however many connections of its account receive it. */
const texts = new WeakMap<EventRecord, string>();

function serialized(event: EventRecord): string {
  let text = texts.get(event);
  if (text === undefined) {
    text = JSON.stringify(paymentEventMessage(event));
    texts.set(event, text);
  }
  return text;
}
