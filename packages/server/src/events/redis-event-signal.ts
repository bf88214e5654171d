import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { EventSignal } from './event-signal.ts';

/**
 * The signal across instances: Redis pub/sub on one channel. Publishing is fire-and-forget (a message
 * lost while Redis is away is made up by each instance's outbox poll), and the subscriber connection
 * reconnects and resubscribes by itself (ioredis).
 */
export class RedisEventSignal implements EventSignal {
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly listeners = new Set<() => void>();
  /** Names this instance's messages, so it can skip them when they come back. */
  private readonly sender = randomUUID();

  constructor(
    url: string,
    private readonly channel = 'gate402:events',
    onError: (error: Error) => void = () => {},
  ) {
    // Named in Redis's CLIENT LIST by process, so an operator can tell which instance holds them.
    const name = `gate402:${process.pid}:events`;
    this.publisher = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      commandTimeout: 1_000,
      connectionName: `${name}-publish`,
    });
    // Reconnects and subscribes again by itself (autoResubscribe); while it is away, each instance's
    // outbox poll (EVENTS_POLL_MS) brings other instances' events instead.
    this.subscriber = new Redis(url, { lazyConnect: true, connectionName: `${name}-subscribe` });
    this.publisher.on('error', onError);
    this.subscriber.on('error', onError);
    this.subscriber.on('message', (channel: string, sender: string) => {
      // Its own messages come back too; this instance's hub already has its events.
      if (channel !== this.channel || sender === this.sender) return;
      for (const listener of this.listeners) listener();
    });
  }

  async connect(): Promise<void> {
    await Promise.all([this.publisher.connect(), this.subscriber.connect()]);
    await this.subscriber.subscribe(this.channel);
  }

  publish(): void {
    this.publisher.publish(this.channel, this.sender).catch(() => {});
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    await Promise.all([this.publisher, this.subscriber].map((r) => r.quit().catch(() => r.disconnect())));
  }
}
