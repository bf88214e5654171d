import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One JSON-RPC call as a client sent it. */
export interface JsonRpcCall {
  readonly id: unknown;
  readonly method: string;
  params?: unknown[];
}

/**
 * What the proxy does with one call: answer it itself (`result` or `error`), or forward it to the
 * target (as it is, or changed in place) and hand the target's answer to `reshape` before it goes back.
 */
export type JsonRpcPlay = (call: JsonRpcCall) => {
  readonly answer?: { readonly result: unknown } | { readonly error: object };
  readonly reshape?: (json: { result?: unknown }) => void;
};

/**
 * A JSON-RPC proxy on a free loopback port in front of `target`, playing a node of another kind through
 * `play`: one without some method or parameter, one that lags, one on another fork.
 */
export async function startJsonRpcProxy(
  target: string,
  play: JsonRpcPlay,
): Promise<{ readonly url: string; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const call = JSON.parse(Buffer.concat(chunks).toString()) as JsonRpcCall;
    res.setHeader('content-type', 'application/json');
    const played = play(call);
    if (played.answer !== undefined) {
      res.end(JSON.stringify({ jsonrpc: '2.0', id: call.id, ...played.answer }));
      return;
    }
    const answer = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(call),
    });
    const json = (await answer.json()) as { result?: unknown };
    played.reshape?.(json);
    res.end(JSON.stringify(json));
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
