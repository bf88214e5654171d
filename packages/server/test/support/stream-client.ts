import { WebSocket } from 'ws';

export interface StreamMessage {
  readonly type: string;
  readonly [field: string]: unknown;
}

/** A payment stream client that keeps every message it got, for tests to wait on. */
export class StreamClient {
  readonly messages: StreamMessage[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: (() => void)[] = [];

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.messages.push(JSON.parse(data.toString()) as StreamMessage);
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        for (const wake of this.waiters.splice(0)) wake();
      });
    });
    ws.on('error', () => {});
  }

  /** Payment events only (control messages left out). */
  events(): StreamMessage[] {
    return this.messages.filter((m) => m.type.startsWith('payment.'));
  }

  send(message: unknown): void {
    this.ws.send(JSON.stringify(message));
  }

  /** Resolves when `condition` holds over the messages so far; rejects after `timeoutMs`. */
  async until(
    condition: (client: StreamClient) => boolean,
    timeoutMs = 5_000,
    what = 'condition',
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition(this)) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.messages.slice(-5))}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.ws.close();
  }
}

/** Opens the stream; resolves once the upgrade succeeded, rejects with the HTTP status when refused. */
export function openStream(
  url: string,
  options: { headers?: Record<string, string>; protocols?: string[] } = {},
): Promise<StreamClient> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options.protocols ?? [], { headers: options.headers ?? {} });
    const client = new StreamClient(ws);
    ws.once('open', () => resolve(client));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () =>
        reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body })),
      );
    });
    ws.once('error', reject);
  });
}
