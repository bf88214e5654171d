import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { guardedFetch } from '../../../src/outbound/guarded-fetch.ts';
import { OutboundUrlError } from '../../../src/outbound/ssrf-guard.ts';

/**
 * guardedFetch, the fetch /mcp's fetch_paid_url reaches sellers with: the SSRF guard before each request,
 * the connection pinned to the addresses it checked, no redirect followed, and the caller's signal
 * ending the exchange at any point. A real server on loopback (allowed only with allowPrivate).
 */
describe('guardedFetch', () => {
  let server: Server;
  let origin: string;
  const seen: { method: string; host: string; body: string }[] = [];

  before(async () => {
    server = createServer(async (req: IncomingMessage, res) => {
      let body = '';
      for await (const chunk of req) body += chunk;
      seen.push({ method: req.method ?? '', host: req.headers.host ?? '', body });
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
        res.end();
      } else if (req.url === '/slow') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first part;');
        // The rest never comes.
      } else if (req.url === '/empty') {
        res.writeHead(204, { 'x-thing': 'a' });
        res.end();
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'] });
        res.end(JSON.stringify({ ok: true, body }));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const open = guardedFetch({ allowPrivate: true }, { maxRequestBytes: 1000 });

  it('answers like fetch: status, headers (repeated ones kept), body; a POST body is sent', async () => {
    const res = await open(`${origin}/echo`, { method: 'POST', body: 'hello', headers: { 'x-a': '1' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('set-cookie'), 'a=1, b=2');
    assert.deepEqual(await res.json(), { ok: true, body: 'hello' });
    const empty = await open(`${origin}/empty`);
    assert.equal(empty.status, 204);
    assert.equal(empty.headers.get('x-thing'), 'a');
  });

  it('connects to exactly the addresses the guard resolved (no second DNS lookup), keeping the host name', async () => {
    const port = (server.address() as AddressInfo).port;
    const pinned = guardedFetch(
      { allowPrivate: true },
      { maxRequestBytes: 1000, resolve: async () => [{ address: '127.0.0.1', family: 4 }] },
    );
    // No resolver on this machine knows the name: only the guard's answer can have reached the server.
    const res = await pinned(`http://seller.invalid:${port}/echo`);
    assert.equal(res.status, 200);
    assert.equal(seen.at(-1)?.host, `seller.invalid:${port}`);
  });

  it('never follows a redirect: the 3xx is the answer, and its target is not asked', async () => {
    const before = seen.length;
    const res = await open(`${origin}/redirect`);
    assert.equal(res.status, 302);
    assert.equal(res.headers.get('location'), 'http://169.254.169.254/latest/meta-data/');
    assert.equal(seen.length, before + 1);
  });

  it('refuses a request body over the limit before connecting', async () => {
    const before = seen.length;
    await assert.rejects(
      open(`${origin}/echo`, { method: 'POST', body: 'x'.repeat(1001) }),
      OutboundUrlError,
    );
    assert.equal(seen.length, before);
  });

  it("ends the exchange when the caller's signal fires, the body included", async () => {
    const controller = new AbortController();
    const res = await open(`${origin}/slow`, { signal: controller.signal });
    const reader = res.body?.getReader();
    assert.ok(reader);
    const first = await reader.read();
    assert.equal(new TextDecoder().decode(first.value), 'first part;');
    controller.abort();
    await assert.rejects(reader.read());
  });

  it('holds a public-only policy: private, loopback and unresolvable hosts refused before any connection', async () => {
    const before = seen.length;
    const publicOnly = guardedFetch(
      { allowPrivate: false },
      {
        maxRequestBytes: 1000,
        // A name that resolves to loopback (DNS rebinding's second answer) is refused like the address.
        resolve: async (host) => (host === 'rebind.test' ? [{ address: '127.0.0.1', family: 4 }] : []),
      },
    );
    for (const url of [
      'https://rebind.test/',
      'https://127.0.0.1/',
      'https://nowhere.test/',
      'http://example.com/',
      'https://example.com:8443/',
    ]) {
      await assert.rejects(publicOnly(url), OutboundUrlError, url);
    }
    assert.equal(seen.length, before);
  });
});
