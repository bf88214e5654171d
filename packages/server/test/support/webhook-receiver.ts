import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  readonly headers: Record<string, string>;
  readonly body: string;
  /** The payload as the standardwebhooks library verified it; undefined when verification failed. */
  readonly verified: unknown;
  readonly answeredWith: number;
  /** Date.now() when it arrived. */
  readonly at: number;
  /** Date.now() when its connection closed (answered, or dropped by the sender); undefined while open. */
  closedAt?: number;
}

/** A status, or a status with headers (Retry-After, say) and a delay of its own before answering. */
export type WebhookAnswer =
  | number
  | { readonly status: number; readonly headers?: Record<string, string>; readonly delayMs?: number };

/**
 * A webhook endpoint on 127.0.0.1 that checks every request with the standardwebhooks library, as a
 * receiver in production would, and answers with what `answer` picks for the n-th request, `delayMs`
 * after it arrived (a slow endpoint; the request is in `received` at once, with when it came).
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  secret: string | undefined;
  private readonly server: Server;

  constructor(
    private readonly answer: (n: number) => WebhookAnswer = () => 200,
    private readonly delayMs = 0,
  ) {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v ?? '')]),
        );
        let verified: unknown;
        try {
          verified = this.secret === undefined ? undefined : new Webhook(this.secret).verify(body, headers);
        } catch {
          verified = undefined;
        }
        const answer = this.answer(this.received.length + 1);
        const {
          status,
          headers: answerHeaders = {},
          delayMs = this.delayMs,
        } = typeof answer === 'number' ? { status: answer } : answer;
        const received: ReceivedWebhook = { headers, body, verified, answeredWith: status, at: Date.now() };
        this.received.push(received);
        res.on('close', () => {
          received.closedAt = Date.now();
        });
        const timer = setTimeout(() => res.writeHead(status, answerHeaders).end(), delayMs);
        res.on('close', () => clearTimeout(timer));
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  async until(count: number, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      if (Date.now() > deadline) throw new Error(`got ${this.received.length} of ${count} webhook requests`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
