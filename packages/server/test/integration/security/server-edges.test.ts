import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { ConfigError, loadConfig } from '../../../src/config.ts';
import { type DashboardApp, startDashboardApp } from '../../support/dashboard-app.ts';

const PASSWORD = 'correct horse battery';
const REQUEST_TIMEOUT_MS = 600;

/** What a raw socket got until the server closed it, and when. */
function rawRequest(
  port: number,
  head: string,
  trickle?: { everyMs: number },
): Promise<{ answer: string; closedAfterMs: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1', () => socket.write(head));
    let answer = '';
    const timer = trickle === undefined ? undefined : setInterval(() => socket.write('{'), trickle.everyMs);
    socket.on('data', (chunk) => {
      answer += chunk.toString();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ answer, closedAfterMs: Date.now() - started });
    });
  });
}

function postHead(path: string): string {
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
}

describe('the HTTP server times out slow requests', () => {
  let gw: DashboardApp;
  let port: number;
  before(async () => {
    gw = await startDashboardApp({ limits: { requestTimeoutMs: REQUEST_TIMEOUT_MS } });
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    port = (gw.app.server.address() as { port: number }).port;
  });
  after(() => gw.close());

  for (const path of ['/dashboard/api/login', '/dashboard/api/signup', '/webhooks']) {
    it(`answers 408 to a body announced on ${path} and never sent, within the timeout`, async () => {
      const { answer, closedAfterMs } = await rawRequest(port, postHead(path));
      // /webhooks answers 401 at once (no key), before the body; the connection still ends at the timeout.
      assert.match(
        answer,
        path === '/webhooks' ? /^HTTP\/1\.1 401 [\s\S]*HTTP\/1\.1 408 / : /^HTTP\/1\.1 408 /,
      );
      assert.match(answer, /"request":"must arrive in time"/);
      assert.ok(closedAfterMs >= REQUEST_TIMEOUT_MS - 50, `closed after ${closedAfterMs} ms`);
      assert.ok(closedAfterMs < REQUEST_TIMEOUT_MS * 2, `closed after ${closedAfterMs} ms`);
    });
  }

  it('answers 408 to a body trickled a byte at a time, though each byte comes before any idle timeout', async () => {
    const { answer, closedAfterMs } = await rawRequest(port, postHead('/dashboard/api/login'), {
      everyMs: 100,
    });
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.ok(closedAfterMs < REQUEST_TIMEOUT_MS * 2, `closed after ${closedAfterMs} ms`);
  });

  it('closes a connection that never sends a byte, within the timeout (it would otherwise hold a socket for good)', async () => {
    const { answer, closedAfterMs } = await rawRequest(port, '');
    assert.match(answer, /^(HTTP\/1\.1 408 [\s\S]*)?$/);
    assert.ok(closedAfterMs >= REQUEST_TIMEOUT_MS - 50, `closed after ${closedAfterMs} ms`);
    assert.ok(closedAfterMs < REQUEST_TIMEOUT_MS * 2, `closed after ${closedAfterMs} ms`);
  });

  it('closes a connection that sent only part of a request line, within the timeout', async () => {
    const { answer, closedAfterMs } = await rawRequest(port, 'GET /dashboard/api/con');
    assert.match(answer, /^(HTTP\/1\.1 408 [\s\S]*)?$/);
    assert.ok(closedAfterMs < REQUEST_TIMEOUT_MS * 2, `closed after ${closedAfterMs} ms`);
  });

  it('still serves a request that arrives in time', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/dashboard/api/config`);
    assert.equal(res.status, 200);
  });
});

describe('connection caps', () => {
  let gw: DashboardApp;
  let port: number;
  before(async () => {
    gw = await startDashboardApp({
      limits: { maxConnectionsPerAddress: 3, streamMaxUnauthenticated: 10 },
    });
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    port = (gw.app.server.address() as { port: number }).port;
  });
  after(() => gw.close());

  it("closes a client address's connection past MAX_CONNECTIONS_PER_ADDRESS, and takes one again once one closes", async () => {
    const held: Socket[] = [];
    for (let i = 0; i < 3; i++) {
      const socket = connect(port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      held.push(socket);
    }
    // Accepted by the kernel, then closed by the gateway before a byte is read.
    const { answer } = await rawRequest(port, 'GET /dashboard/api/config HTTP/1.1\r\nHost: a\r\n\r\n');
    assert.equal(answer, '');
    held.pop()?.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const { answer: served } = await rawRequest(
      port,
      'GET /dashboard/api/config HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n',
    );
    assert.match(served, /^HTTP\/1\.1 200 /);
    for (const socket of held) socket.destroy();
  });

  it('caps WebSocket upgrades that wait for their auth message (a tenth of STREAM_MAX_UNAUTHENTICATED per address)', async () => {
    const url = `ws://127.0.0.1:${port}/v1/payments/stream`;
    const first = new WebSocket(url);
    await new Promise((resolve) => first.once('open', resolve));
    const second = new WebSocket(url);
    const status = await new Promise<number>((resolve) => {
      second.once('unexpected-response', (request, res) => {
        resolve(res.statusCode ?? 0);
        request.destroy();
      });
      second.once('open', () => resolve(101));
    });
    assert.equal(status, 429);
    first.close();
    await new Promise((resolve) => first.once('close', resolve));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const third = new WebSocket(url);
    await new Promise((resolve) => third.once('open', resolve));
    third.close();
  });
});

describe('TRUST_PROXY', () => {
  it('refuses true, saying what to write instead', () => {
    assert.throws(
      () => loadConfig({ TRUST_PROXY: 'true' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        /TRUST_PROXY: true would trust every hop/.test(error.message) &&
        /TRUST_PROXY=1 for one reverse proxy/.test(error.message),
    );
  });

  it("takes a hop count or the proxies' addresses and CIDRs, never all", () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: '1' }).trustProxy, 1);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1,loopback' }).trustProxy, [
      '10.0.0.0/8',
      '127.0.0.1',
      '::1',
      'loopback',
    ]);
    for (const bad of ['0.0.0.0/99', 'proxy.example', '11', '10.0.0.0/8/1']) {
      assert.throws(() => loadConfig({ TRUST_PROXY: bad }), ConfigError, bad);
    }
  });

  for (const trustProxy of [1, ['127.0.0.1']] as const) {
    it(`behind one reverse proxy (${JSON.stringify(trustProxy)}), a rotating X-Forwarded-For escapes no per-address limit`, async () => {
      const gw = await startDashboardApp({ trustProxy, loginAttempts: 5 });
      try {
        // The proxy appends the address it saw; what the client wrote comes before it.
        const from = (spoofed: string) => ({ 'x-forwarded-for': `${spoofed}, 198.51.100.7` });
        const statuses: number[] = [];
        for (let i = 0; i < 7; i++) {
          const res = await gw.app.inject({
            method: 'POST',
            url: '/dashboard/api/signup',
            headers: from(`203.0.113.${i}`),
            payload: { email: `u${i}-${randomBytes(3).toString('hex')}@example.test`, password: PASSWORD },
          });
          statuses.push(res.statusCode);
        }
        assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429]);
        const logIns: number[] = [];
        for (let i = 0; i < 52; i++) {
          const res = await gw.app.inject({
            method: 'POST',
            url: '/dashboard/api/login',
            headers: from(`192.0.2.${i}`),
            payload: { email: `nobody${i}@example.test`, password: 'wrong password!' },
          });
          logIns.push(res.statusCode);
        }
        assert.ok(logIns.includes(429), 'the per-address log-in limit was met');
      } finally {
        await gw.close();
      }
    });
  }
});
