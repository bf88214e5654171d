import type { WebSocket } from 'ws';
import type { EventRecord } from '../../domain/records/event-records.ts';
import { AccountEventFeed } from '../account-event-feed.ts';
import type { EventHub } from '../event-hub.ts';
import { paymentEventMessage } from '../payment-event-message.ts';
import { STREAM_CLOSE } from './stream-close-codes.ts';
import { EVERYTHING, matches, type StreamFilter } from './stream-subscription.ts';

/** How long a replay waits for the client to read what it was sent before it counts as too slow. */
const REPLAY_DRAIN_TIMEOUT_MS = 30_000;

/**
 * One authenticated stream connection: what it subscribed to, and its AccountEventFeed, which hands on
 * the account's events once each, in order, across a replay (`since`) and the switch to live.
 */
export class StreamConnection {
  private filter: StreamFilter = EVERYTHING;
  private readonly feed: AccountEventFeed;
  private closed = false;

  constructor(
    private readonly socket: WebSocket,
    accountId: string,
    hub: EventHub,
    private readonly maxBufferedBytes: number,
    private readonly log: (message: string, error: unknown) => void,
  ) {
    this.feed = new AccountEventFeed(hub, accountId, {
      deliver: (event) => {
        if (matches(this.filter, event)) this.send(event);
      },
      drained: () => this.drained(),
    });
    socket.once('close', () => this.dispose());
  }

  /** Replaces the filter; with `sinceSeq`, replays the account's events after it first. */
  subscribe(filter: StreamFilter, sinceSeq: number | undefined): void {
    this.filter = filter;
    if (sinceSeq === undefined) return;
    this.feed.replayAfter(sinceSeq).catch((error) => {
      this.log('payment stream replay failed', error);
      this.close(STREAM_CLOSE.UNAVAILABLE, 'replay failed; reconnect with since');
    });
  }

  /** Resolves once the client has read most of what was sent, so a replay never outruns it. */
  private async drained(): Promise<boolean> {
    const started = Date.now();
    while (!this.closed && this.socket.bufferedAmount > this.maxBufferedBytes / 2) {
      if (Date.now() - started > REPLAY_DRAIN_TIMEOUT_MS) {
        this.close(STREAM_CLOSE.TOO_SLOW, 'consumer too slow');
        return false;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return !this.closed;
  }

  /**
   * Sends an answer to one of the client's messages (pong, subscribed, error) under the same limit as
   * events: a client that keeps sending messages and never reads their answers is a slow consumer too.
   */
  reply(message: Record<string, unknown>): void {
    this.write(JSON.stringify(message));
  }

  private send(event: EventRecord): void {
    this.write(serialized(event));
  }

  private write(text: string): void {
    if (this.closed) return;
    this.socket.send(text);
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
    this.feed.close();
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
