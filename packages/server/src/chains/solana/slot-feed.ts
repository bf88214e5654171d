import { setTimeout as sleep } from 'node:timers/promises';
import {
  createSolanaRpcSubscriptions,
  type RpcSubscriptions,
  type SolanaRpcSubscriptionsApi,
} from '@solana/kit';
import { withDeadline } from '../deadline.ts';
import { type RpcEndpoints, raceAbort } from '../rpc-endpoints.ts';

/**
 * How long the feed stays on a fallback PubSub endpoint before it asks a preferred one again. Long
 * against a slot, short against an outage: a recovered preferred endpoint (often the one paid for, or
 * the closest) carries the feed again within half a minute, and one still down costs one attempt to
 * open a subscription per interval.
 */
export const DEFAULT_SLOT_FEED_RETURN_MS = 30_000;

export interface SlotFeedOptions {
  /** The network's PubSub URLs in order of preference, with the RPC calls' time limits. */
  readonly endpoints: RpcEndpoints;
  /** Called on every new slot. */
  readonly onSlot: () => void;
  /** Whether anyone still needs slots: a feed that breaks while nobody does stops until `start()`. */
  readonly wanted: () => boolean;
  /**
   * A subscription that brings no slot for this long is taken for dead (an endpoint can stop sending
   * without closing the socket); undefined when slots may legitimately stop (a localnet advanced by hand).
   */
  readonly silenceMs: number | undefined;
  /**
   * While the feed is on an endpoint other than the first, every this many ms it tries the ones before
   * it again, and moves back to the first of them that opens a subscription and brings a slot.
   */
  readonly returnAfterMs: number;
  /** Aborted when the adapter closes. */
  readonly lifetime: AbortSignal;
}

/** A subscription that is open: its endpoint, its notifications, and what closes it. */
interface Subscription {
  readonly url: string;
  readonly slots: AsyncIterator<unknown>;
  readonly connection: AbortController;
}

/**
 * New-slot notifications from the first PubSub endpoint that answers, moving to the next when the
 * subscription cannot be opened within the time limit, breaks, or goes silent. On a fallback endpoint it
 * tries the preferred ones again every `returnAfterMs` and moves back to one that has recovered (a
 * subscription opens and brings a slot), so traffic does not stay on a fallback until that one fails.
 * The feed only speeds up confirmations (the signature watcher polls anyway), so while every endpoint is
 * down it waits and tries again, for as long as a confirmation is awaited.
 */
export class SlotFeed {
  private running = false;
  private readonly clients = new Map<string, RpcSubscriptions<SolanaRpcSubscriptionsApi>>();

  constructor(private readonly options: SlotFeedOptions) {}

  /** Starts listening unless it already is. */
  start(): void {
    if (this.running || this.options.lifetime.aborted) return;
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
    });
  }

  private async run(): Promise<void> {
    const { endpoints, lifetime } = this.options;
    // A preferred endpoint's subscription, already open and bringing slots, that the feed moves to.
    let preferred: Subscription | undefined;
    while (!lifetime.aborted) {
      let retryInMs = 0;
      try {
        const opened =
          preferred ??
          (await endpoints.run({
            method: 'slotSubscribe',
            attempt: (url, signal) => this.subscribe(url, signal),
            // Whatever stops a subscription from opening, another endpoint may open one.
            isUnavailable: () => true,
            signal: lifetime,
          }));
        preferred = await this.listen(opened);
        if (lifetime.aborted) {
          preferred?.connection.abort();
          return;
        }
        if (preferred === undefined) endpoints.markDown(opened.url);
      } catch (error) {
        if (lifetime.aborted) return;
        // Every endpoint is down: ask again when the first is due.
        const seconds = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds;
        retryInMs = typeof seconds === 'number' ? seconds * 1_000 : endpoints.timeoutMs;
      }
      // A move back to a preferred endpoint carries on like the subscription it replaces.
      if (preferred === undefined && !this.options.wanted()) return;
      if (retryInMs > 0) await sleep(retryInMs, undefined, { signal: lifetime }).catch(() => undefined);
    }
  }

  /**
   * Opens a slot subscription on `url`. `signal` limits only the opening: once open, the subscription
   * lives until its own `connection` is aborted.
   */
  private async subscribe(url: string, signal: AbortSignal): Promise<Subscription> {
    const connection = new AbortController();
    // Opening timed out: the half-open subscription is dropped, not left to open later unwatched.
    const onAbort = () => connection.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const slots = await this.client(url)
        .slotNotifications()
        .subscribe({ abortSignal: AbortSignal.any([this.options.lifetime, connection.signal]) });
      return { url, slots: slots[Symbol.asyncIterator](), connection };
    } catch (error) {
      // Kit shares one pending subscription per request until its subscribers abort: left alone, a
      // refused one would be handed to every later attempt on this URL, which would then fail at once.
      connection.abort();
      throw error;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Until the subscription ends, breaks or goes silent (undefined), or a preferred endpoint has recovered
   * (its subscription, which replaces this one).
   */
  private async listen({ url, slots, connection }: Subscription): Promise<Subscription | undefined> {
    const { silenceMs } = this.options;
    const silence = silenceMs === undefined ? undefined : setTimeout(() => connection.abort(), silenceMs);
    silence?.unref();
    let recovered: Subscription | undefined;
    const returning = this.watchPreferred(url, connection.signal).then((found) => {
      recovered = found;
      if (found !== undefined) connection.abort();
    });
    try {
      for await (const _slot of { [Symbol.asyncIterator]: () => slots }) {
        silence?.refresh();
        this.options.onSlot();
      }
    } catch {
      // Closed, reset or aborted: the caller moves on to the next endpoint.
    } finally {
      clearTimeout(silence);
      connection.abort();
    }
    await returning;
    return recovered;
  }

  /**
   * While `current` (not the first endpoint) carries the feed, tries the endpoints before it every
   * `returnAfterMs`; resolves with the first subscription that opened and brought a slot, or undefined
   * once `current` ends.
   */
  private async watchPreferred(current: string, ends: AbortSignal): Promise<Subscription | undefined> {
    const { endpoints, returnAfterMs, lifetime } = this.options;
    const before = endpoints.urls.slice(0, endpoints.urls.indexOf(current));
    while (before.length > 0) {
      const waited = await sleep(returnAfterMs, true, { signal: ends, ref: false }).catch(() => false);
      if (!waited) return undefined;
      for (const url of before) {
        const found = await this.tryRecovered(url, AbortSignal.any([ends, lifetime]));
        if (found !== undefined) return found;
        if (ends.aborted) return undefined;
      }
    }
    return undefined;
  }

  /**
   * A subscription on `url` if it opens within the time limit and brings a slot within the silence
   * limit (an endpoint that opens but stays silent has not recovered); else undefined, `url` marked down.
   */
  private async tryRecovered(url: string, cancel: AbortSignal): Promise<Subscription | undefined> {
    const { endpoints, silenceMs } = this.options;
    let opened: Subscription | undefined;
    try {
      const subscription = await withDeadline(endpoints.timeoutMs, cancel, (limit) =>
        raceAbort(this.subscribe(url, limit), limit),
      );
      opened = subscription;
      const first = await (silenceMs === undefined
        ? raceAbort(subscription.slots.next(), cancel)
        : withDeadline(silenceMs, cancel, (limit) => raceAbort(subscription.slots.next(), limit)));
      if (first.done === true) throw new Error('the subscription ended');
      this.options.onSlot();
      return opened;
    } catch {
      opened?.connection.abort();
      if (!cancel.aborted) endpoints.markDown(url);
      return undefined;
    }
  }

  private client(url: string): RpcSubscriptions<SolanaRpcSubscriptionsApi> {
    let client = this.clients.get(url);
    if (client === undefined) {
      client = createSolanaRpcSubscriptions(url);
      this.clients.set(url, client);
    }
    return client;
  }
}
