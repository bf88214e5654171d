import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { address, createSolanaRpcFromTransport } from '@solana/kit';
import { ChainError } from '../../../src/chains/chain-error.ts';
import { RpcEndpoints, type RpcOutcome } from '../../../src/chains/rpc-endpoints.ts';
import { failoverTransport, isTransportFailure } from '../../../src/chains/solana/failover-transport.ts';
import {
  createNodeHttpTransport,
  RpcTransportError,
} from '../../../src/chains/solana/node-http-transport.ts';

type Handler = (body: string, req: IncomingMessage, res: ServerResponse) => void;

/** A real node:http server whose answer each test sets; it records the bodies it was sent. */
async function startServer() {
  let handler: Handler = (_body, _req, res) => res.end('{}');
  const bodies: string[] = [];
  let closedConnections = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      bodies.push(body);
      handler(body, req, res);
    });
  });
  server.on('connection', (socket) => socket.on('close', () => closedConnections++));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    closedConnections: () => closedConnections,
    answer(next: Handler) {
      handler = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const json = (res: ServerResponse, text: string) =>
  res
    .writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    .end(text);

const payload = (method: string, params: unknown[] = []) => ({ id: '7', jsonrpc: '2.0', method, params });

describe('the node:http JSON-RPC transport', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  let spare: Awaited<ReturnType<typeof startServer>>;
  before(async () => {
    server = await startServer();
    spare = await startServer();
    spare.answer((_body, _req, res) => json(res, '{"jsonrpc":"2.0","result":42,"id":"7"}'));
  });
  after(async () => {
    await server?.close();
    await spare?.close();
  });
  beforeEach(() => {
    server.bodies.length = 0;
  });

  /** Both servers behind RpcEndpoints, the test server first, with every attempt's outcome recorded. */
  const failover = () => {
    const outcomes: RpcOutcome[] = [];
    const endpoints = new RpcEndpoints({
      network: 'solana:test',
      urls: [server.url, spare.url],
      timeoutMs: 2_000,
      downMs: 60_000,
      observer: { onCall: (_network, _method, outcome) => outcomes.push(outcome) },
    });
    return { rpc: createSolanaRpcFromTransport(failoverTransport(endpoints)), outcomes, endpoints };
  };

  it('sends bigints as JSON integers and reads every integer of a Solana answer as a bigint, as kit does', async () => {
    server.answer((_body, _req, res) =>
      json(
        res,
        '{"jsonrpc":"2.0","result":{"context":{"slot":18446744073709551615},"value":-5,' +
          '"fee":1.5,"big":1e3,"small":2E-2,"text":"12 \\"34\\" \\\\","list":[0,-0.25,7]},"id":"7"}',
      ),
    );
    const transport = createNodeHttpTransport({ url: server.url });
    const answer = await transport({
      payload: payload('getBalance', ['addr', { minContextSlot: 12345678901234567890n, limit: 3 }]),
    });
    assert.equal(
      server.bodies[0],
      '{"id":"7","jsonrpc":"2.0","method":"getBalance","params":["addr",{"minContextSlot":12345678901234567890,"limit":3}]}',
    );
    assert.deepEqual(answer, {
      jsonrpc: '2.0',
      result: {
        context: { slot: 18446744073709551615n },
        value: -5n,
        fee: 1.5,
        big: 1000n,
        small: 0.02,
        text: '12 "34" \\',
        list: [0n, -0.25, 7n],
      },
      id: '7',
    });
  });

  it('reads a method kit does not know as plain JSON', async () => {
    server.answer((_body, _req, res) => json(res, '{"jsonrpc":"2.0","result":{"n":5},"id":"7"}'));
    const answer = await createNodeHttpTransport({ url: server.url })({ payload: payload('getFancyThing') });
    assert.deepEqual(answer, { jsonrpc: '2.0', result: { n: 5 }, id: '7' });
  });

  it('answers through a real kit RPC: a bigint balance', async () => {
    server.answer((_body, _req, res) =>
      json(res, '{"jsonrpc":"2.0","result":{"context":{"slot":9},"value":9007199254740993},"id":"7"}'),
    );
    const rpc = createSolanaRpcFromTransport(createNodeHttpTransport({ url: server.url }));
    const { value } = await rpc.getBalance(address('11111111111111111111111111111111')).send();
    assert.equal(value, 9007199254740993n);
  });

  it('rejects an HTTP 500, which RpcEndpoints counts as unavailable and fails over from', async () => {
    server.answer((_body, _req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('boom'));
    const error = await createNodeHttpTransport({ url: server.url })({ payload: payload('getSlot') }).catch(
      (e: unknown) => e,
    );
    assert.ok(error instanceof RpcTransportError);
    assert.equal(error.kind, 'http_status');
    assert.equal(error.statusCode, 500);
    assert.equal(isTransportFailure(error), true);

    const { rpc, outcomes } = failover();
    assert.equal(await rpc.getSlot().send(), 42n);
    assert.deepEqual(outcomes, ['unavailable', 'ok']);
  });

  it('rejects a body that is not JSON (a proxy error page) as unavailable', async () => {
    server.answer((_body, _req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>bad gateway'),
    );
    const error = await createNodeHttpTransport({ url: server.url })({ payload: payload('getSlot') }).catch(
      (e: unknown) => e,
    );
    assert.ok(error instanceof RpcTransportError);
    assert.equal(error.kind, 'malformed');
    assert.ok(error.cause instanceof SyntaxError);
    assert.equal(isTransportFailure(error), true);

    const { rpc, outcomes } = failover();
    assert.equal(await rpc.getSlot().send(), 42n);
    assert.deepEqual(outcomes, ['unavailable', 'ok']);
  });

  it('rejects when nothing listens, as unavailable', async () => {
    const closed = await startServer();
    const url = closed.url;
    await closed.close();
    const error = await createNodeHttpTransport({ url })({ payload: payload('getSlot') }).catch(
      (e: unknown) => e,
    );
    assert.ok(error instanceof RpcTransportError);
    assert.equal(error.kind, 'connection');
    assert.equal(isTransportFailure(error), true);
  });

  it('rejects with the signal reason as soon as the signal aborts, and drops the connection', async () => {
    server.answer(() => {}); // never answers
    const closedBefore = server.closedConnections();
    const transport = createNodeHttpTransport({ url: server.url });
    const controller = new AbortController();
    const started = performance.now();
    const pending = transport({ payload: payload('getSlot'), signal: controller.signal });
    setTimeout(() => controller.abort(new Error('caller gave up')), 50);
    await assert.rejects(pending, { message: 'caller gave up' });
    const ms = performance.now() - started;
    assert.ok(ms < 500, `rejected after ${Math.round(ms)} ms`);
    await waitFor(() => server.closedConnections() > closedBefore);

    // Already aborted: nothing is sent.
    const sent = server.bodies.length;
    await assert.rejects(
      transport({ payload: payload('getSlot'), signal: AbortSignal.abort(new Error('no')) }),
      {
        message: 'no',
      },
    );
    assert.equal(server.bodies.length, sent);
  });

  it('gives up on a silent endpoint within the RpcEndpoints time limit and answers from the next', async () => {
    server.answer(() => {});
    const endpoints = new RpcEndpoints({
      network: 'solana:test',
      urls: [server.url, spare.url],
      timeoutMs: 100,
      downMs: 60_000,
    });
    const rpc = createSolanaRpcFromTransport(failoverTransport(endpoints));
    const started = performance.now();
    assert.equal(await rpc.getSlot().send(), 42n);
    assert.ok(performance.now() - started < 1_000);
  });

  it('refuses an answer over the size bound, declared or streamed, without marking the endpoint down', async () => {
    const big = `{"jsonrpc":"2.0","result":"${'x'.repeat(2_000)}","id":"7"}`;
    const transport = createNodeHttpTransport({ url: server.url, maxResponseBytes: 1_000 });

    server.answer((_body, _req, res) => json(res, big));
    const declared = await transport({ payload: payload('getSlot') }).catch((e: unknown) => e);
    assert.ok(declared instanceof RpcTransportError);
    assert.equal(declared.kind, 'too_large');
    assert.equal(isTransportFailure(declared), false);

    // Chunked, no content-length: counted as it arrives.
    server.answer((_body, _req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(big.slice(0, 600));
      setTimeout(() => res.end(big.slice(600)), 10);
    });
    const streamed = await transport({ payload: payload('getSlot') }).catch((e: unknown) => e);
    assert.ok(streamed instanceof RpcTransportError);
    assert.equal(streamed.kind, 'too_large');

    // Just under the bound passes.
    const fits = `{"jsonrpc":"2.0","result":"${'y'.repeat(900)}","id":"7"}`;
    server.answer((_body, _req, res) => json(res, fits));
    assert.deepEqual(await transport({ payload: payload('getSlot') }), JSON.parse(fits));
  });

  it('fails the oversized call alone: the endpoint stays up for the next call', async () => {
    server.answer((_body, _req, res) =>
      json(res, `{"jsonrpc":"2.0","result":"${'x'.repeat(40 * 1024 * 1024)}","id":"7"}`),
    );
    const { rpc, outcomes, endpoints } = failover();
    const error = await rpc
      .getSlot()
      .send()
      .catch((e: unknown) => e);
    assert.ok(error instanceof RpcTransportError && !(error instanceof ChainError));
    assert.equal(error.kind, 'too_large');
    assert.deepEqual(outcomes, ['error']);
    assert.equal(endpoints.allDown, false);
    server.answer((_body, _req, res) => json(res, '{"jsonrpc":"2.0","result":5,"id":"7"}'));
    assert.equal(await rpc.getSlot().send(), 5n);
    assert.deepEqual(outcomes, ['error', 'ok']);
  });

  it('reuses one keep-alive connection for sequential calls', async () => {
    const sockets = new Set<unknown>();
    server.answer((_body, req, res) => {
      sockets.add(req.socket);
      json(res, '{"jsonrpc":"2.0","result":1,"id":"7"}');
    });
    const transport = createNodeHttpTransport({ url: server.url });
    for (let i = 0; i < 5; i++) await transport({ payload: payload('getSlot') });
    assert.equal(sockets.size, 1);
  });

  it('sends once more on a fresh connection when a pooled one turns out closed, and only once', async () => {
    const transport = createNodeHttpTransport({ url: server.url });
    const sockets = new Set<unknown>();
    server.answer((_body, req, res) => {
      sockets.add(req.socket);
      json(res, '{"jsonrpc":"2.0","result":1,"id":"7"}');
    });
    await transport({ payload: payload('getSlot') });
    // The pooled connection dies as the next request arrives on it, as when the server closed it idle.
    let resets = 0;
    server.answer((_body, req, res) => {
      if (req.socket === [...sockets][0]) {
        resets++;
        req.socket.destroy();
        return;
      }
      json(res, '{"jsonrpc":"2.0","result":2,"id":"7"}');
    });
    assert.deepEqual(await transport({ payload: payload('getSlot') }), {
      jsonrpc: '2.0',
      result: 2n,
      id: '7',
    });
    assert.equal(resets, 1);

    // A fresh connection that fails is a failure at once: no second try.
    server.answer((_body, req) => req.socket.destroy());
    const before = server.bodies.length;
    const fresh = createNodeHttpTransport({ url: server.url });
    const error = await fresh({ payload: payload('getSlot') }).catch((e: unknown) => e);
    assert.ok(error instanceof RpcTransportError);
    assert.equal(error.kind, 'connection');
    assert.equal(server.bodies.length, before + 1);
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(condition(), 'condition never became true');
}
