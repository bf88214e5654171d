import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { STREAM_CLOSE } from '../../../src/events/stream/stream-close-codes.ts';
import { MemoryRateLimiter } from '../../../src/ratelimit/memory-rate-limiter.ts';
import { SKIP_POSTGRES, tempPostgres } from '../../support/databases.ts';
import { recordReceived } from '../../support/payment-events.ts';
import { openStream, StreamClient } from '../../support/stream-client.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

describe('payment stream', () => {
  let gw: TestGateway;
  let url: string;

  before(async () => {
    gw = await startTestGateway({ events: { authTimeoutMs: 300 } });
    const address = await gw.app.listen({ port: 0, host: '127.0.0.1' });
    url = `${address.replace('http', 'ws')}/v1/payments/stream`;
  });
  after(() => gw.close());

  const connect = async (key: string, query = '') => {
    const client = await openStream(`${url}${query}`, { headers: bearer(key) });
    await client.until((c) => c.messages.some((m) => m.type === 'authenticated'), 5_000, 'authenticated');
    return client;
  };

  it('shows each of two accounts subscribed at once only its own events, in order', async () => {
    const a = await gw.newCaller('premium');
    const b = await gw.newCaller('premium');
    const [streamA, streamB] = await Promise.all([connect(a.key), connect(b.key)]);
    const ids: Record<string, string[]> = { [a.accountId]: [], [b.accountId]: [] };
    for (let i = 0; i < 10; i++) {
      const owner = i % 3 === 0 ? b : a;
      const payment = await recordReceived(gw.services.ledger, owner.accountId, {
        amount: BigInt(i + 1) * 10_000_000n,
      });
      ids[owner.accountId]?.push(payment.id);
    }
    await streamA.until((c) => c.events().length === 6, 5_000, 'six events for A');
    await streamB.until((c) => c.events().length === 4, 5_000, 'four events for B');
    assert.deepEqual(
      streamA.events().map((e) => (e.data as { paymentId: string }).paymentId),
      ids[a.accountId],
    );
    assert.deepEqual(
      streamB.events().map((e) => (e.data as { paymentId: string }).paymentId),
      ids[b.accountId],
    );
    const first = streamA.events()[0];
    assert.ok(first !== undefined);
    assert.deepEqual(Object.keys(first).sort(), ['amount', 'createdAt', 'data', 'id', 'type']);
    assert.equal(first.type, 'payment.received');
    assert.equal(first.amount, 0.02);
    assert.match(String(first.id), /^evt_/);
    assert.equal((first.data as { amount: number; status: string }).amount, 0.02);
    assert.equal((first.data as { status: string }).status, 'submitted');
    // Nothing else arrives later either.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(streamA.events().length, 6);
    assert.equal(streamB.events().length, 4);
    streamA.close();
    streamB.close();
  });

  it('authenticates by header, by subprotocol, or by a first auth message; refuses otherwise', async () => {
    const caller = await gw.newCaller('premium');
    const byProtocol = await openStream(url, { protocols: ['bearer', caller.key] });
    assert.equal(byProtocol.ws.protocol, 'bearer', 'the key is never echoed back');
    await byProtocol.until((c) => c.messages[0]?.type === 'authenticated');
    byProtocol.close();

    const byMessage = await openStream(url);
    byMessage.send({ type: 'auth', apiKey: caller.key });
    byMessage.send({ type: 'subscribe', types: ['payment.failed'] });
    await byMessage.until((c) => c.messages.some((m) => m.type === 'subscribed'));
    assert.deepEqual(byMessage.messages[0], { type: 'authenticated', accountId: caller.accountId });
    assert.deepEqual(byMessage.messages[1], {
      type: 'subscribed',
      wallets: null,
      types: ['payment.failed'],
      since: null,
    });
    byMessage.close();

    const wrongKey = await openStream(url).then((c) => {
      c.send({ type: 'auth', apiKey: 'g402_sk_nope' });
      return c.closed;
    });
    assert.equal(wrongKey.code, STREAM_CLOSE.UNAUTHORIZED);

    const silent = await openStream(url);
    assert.equal((await silent.closed).code, STREAM_CLOSE.UNAUTHORIZED, 'no auth message in time');

    const standard = await gw.newCaller('standard');
    const standardByMessage = await openStream(url);
    standardByMessage.send({ type: 'auth', apiKey: standard.key });
    assert.equal((await standardByMessage.closed).code, STREAM_CLOSE.FORBIDDEN);

    await assert.rejects(
      openStream(url, { headers: bearer(standard.key) }),
      (error: { status: number; body: string }) => {
        assert.equal(error.status, 403);
        assert.equal(JSON.parse(error.body).error.code, 'FORBIDDEN');
        return true;
      },
    );
    await assert.rejects(
      openStream(url, { headers: bearer('g402_sk_invalid') }),
      (error: { status: number; body: string }) => {
        assert.equal(error.status, 401);
        assert.deepEqual(JSON.parse(error.body), {
          success: false,
          error: { code: 'UNAUTHORIZED', message: 'API key missing or invalid.' },
        });
        return true;
      },
    );
    await assert.rejects(
      openStream(`${url}?since=nonsense`, { headers: bearer(caller.key) }),
      (error: { status: number; body: string }) => {
        assert.equal(error.status, 400);
        assert.equal(
          JSON.parse(error.body).error.details.since,
          'must be the id of one of your events (evt_…)',
        );
        return true;
      },
    );
  });

  it('filters by wallet and type, and answers a bad subscribe with INVALID_PARAMETERS details', async () => {
    const caller = await gw.newCaller('premium');
    const stream = await connect(caller.key);
    stream.send({ type: 'subscribe', wallets: ['WalletTwo'], types: ['payment.received'], extra: 1 });
    await stream.until((c) => c.messages.some((m) => m.type === 'error'));
    assert.deepEqual(
      stream.messages.find((m) => m.type === 'error'),
      {
        type: 'error',
        success: false,
        error: {
          code: 'INVALID_PARAMETERS',
          message: 'Invalid request parameters: extra.',
          details: { extra: 'is not a known field' },
        },
      },
    );
    stream.send({ type: 'subscribe', types: ['payment.nope'] });
    await stream.until((c) => c.messages.filter((m) => m.type === 'error').length === 2);
    stream.send({ type: 'subscribe', wallets: Array.from({ length: 101 }, (_, i) => `Wallet${i}`) });
    await stream.until((c) => c.messages.filter((m) => m.type === 'error').length === 3);
    assert.match(JSON.stringify(stream.messages.at(-1)), /"wallets":"must be an array of at most 100/);
    // An empty list matched nothing, silently; it is refused, naming the field.
    stream.send({ type: 'subscribe', wallets: [], types: [] });
    await stream.until((c) => c.messages.filter((m) => m.type === 'error').length === 4);
    assert.deepEqual((stream.messages.at(-1)?.error as { details: unknown } | undefined)?.details, {
      wallets: 'must name at least one wallet; leave it out for all',
      types: 'must name at least one event type; leave it out for all',
    });
    stream.send({ type: 'subscribe', wallets: ['WalletTwo'], types: ['payment.received'] });
    await stream.until((c) => c.messages.some((m) => m.type === 'subscribed'));
    await recordReceived(gw.services.ledger, caller.accountId, { wallet: 'WalletOne' });
    const two = await recordReceived(gw.services.ledger, caller.accountId, { wallet: 'WalletTwo' });
    await stream.until((c) => c.events().length === 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(
      stream.events().map((e) => (e.data as { paymentId: string }).paymentId),
      [two.id],
    );
    stream.close();
  });

  it('answers a malformed handshake with the error body naming the header, without counting it against the rate limit', async () => {
    const caller = await gw.newCaller('enterprise', 2);
    const handshake = (method: string, headers: Record<string, string>) =>
      new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
        const req = httpRequest(url.replace('ws', 'http'), {
          method,
          headers: { connection: 'Upgrade', upgrade: 'websocket', ...bearer(caller.key), ...headers },
        });
        req.on('response', (res) => {
          let body = '';
          res.on('data', (chunk) => {
            body += chunk;
          });
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }),
          );
        });
        req.on('upgrade', () => reject(new Error('upgraded')));
        req.on('error', reject);
        req.end();
      });
    const good = { 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' };
    const cases: [string, Record<string, string>, number, Record<string, string> | undefined][] = [
      ['GET', { 'sec-websocket-version': '13' }, 400, { 'Sec-WebSocket-Key': 'must be 16 bytes in base64' }],
      ['GET', { ...good, 'sec-websocket-version': '99' }, 400, { 'Sec-WebSocket-Version': 'must be 13' }],
      ['GET', { ...good, upgrade: 'h2c' }, 400, { Upgrade: 'must be websocket' }],
      [
        'GET',
        { ...good, 'sec-websocket-protocol': 'chat, b@d' },
        400,
        { 'Sec-WebSocket-Protocol': 'must be distinct comma-separated tokens, as in "bearer, <key>"' },
      ],
      ['POST', good, 404, undefined],
    ];
    for (const [method, headers, status, details] of cases) {
      const answer = await handshake(method, headers);
      assert.equal(answer.status, status, JSON.stringify(headers));
      assert.equal(answer.type, 'application/json; charset=utf-8', "not ws's text/html");
      const body = JSON.parse(answer.body);
      assert.equal(body.success, false);
      assert.deepEqual(body.error.details, details);
    }
    // Five refused handshakes, none counted: the key's two requests a minute still open a stream.
    const stream = await connect(caller.key);
    stream.close();
  });

  it('counts a subscribe with since against the rate limit like a request; one without since is not counted', async () => {
    // The limiter's clock stands still, so the test never straddles the start of a new minute.
    const startedAt = Date.now();
    const limited = await startTestGateway({
      events: {},
      rateLimiter: new MemoryRateLimiter(() => startedAt),
    });
    try {
      const address = await limited.app.listen({ port: 0, host: '127.0.0.1' });
      const caller = await limited.newCaller('enterprise', 3);
      await recordReceived(limited.services.ledger, caller.accountId);
      const since = (await limited.store.events.listAfter(caller.accountId, 0, 1))[0]?.id;
      const stream = await openStream(`${address.replace('http', 'ws')}/v1/payments/stream`, {
        headers: bearer(caller.key),
      });
      // Opening was the first request of three; two replays follow, the third is refused.
      for (let i = 0; i < 3; i++) stream.send({ type: 'subscribe', since });
      await stream.until((c) => c.messages.some((m) => m.type === 'error'), 5_000, 'the refusal');
      const types = stream.messages.map((m) => m.type);
      assert.equal(types.filter((t) => t === 'subscribed').length, 2, types.join());
      assert.equal(types.filter((t) => t === 'error').length, 1, types.join());
      const refusal = stream.messages.at(-1)?.error as { code: string; retryAfter: number };
      assert.equal(refusal.code, 'RATE_LIMIT_EXCEEDED');
      assert.ok(refusal.retryAfter > 0);
      // Changing the filter reads nothing: still answered, and the connection stays.
      stream.send({ type: 'subscribe', types: ['payment.confirmed'] });
      await stream.until((c) => c.messages.at(-1)?.type === 'subscribed');
      assert.equal(stream.ws.readyState, WebSocket.OPEN);
      stream.close();
    } finally {
      await limited.close();
    }
  });

  it('closes a connection that sends a message over 16 KiB with 1009, authenticated or not, and goes on serving', async () => {
    const caller = await gw.newCaller('premium');
    const stream = await connect(caller.key);
    stream.send({ type: 'subscribe', wallets: ['x'.repeat(17 * 1024)] });
    const anonymous = await openStream(url);
    anonymous.send({ type: 'auth', apiKey: 'x'.repeat(17 * 1024) });
    assert.deepEqual([(await stream.closed).code, (await anonymous.closed).code], [1009, 1009]);
    const notText = await connect(caller.key);
    notText.ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
    assert.equal((await notText.closed).code, STREAM_CLOSE.INVALID_UTF8, 'the catalogue names it');
    // Before, ws threw the protocol error from the connection and the process ended.
    const again = await connect(caller.key);
    again.close();
  });

  it('resumes after a disconnect with since: every missed event once, in order, then live ones', async () => {
    const caller = await gw.newCaller('premium');
    const first = await connect(caller.key);
    const written: string[] = [];
    const write = async (n: number) => {
      for (let i = 0; i < n; i++)
        written.push((await recordReceived(gw.services.ledger, caller.accountId)).id);
    };
    await write(3);
    await first.until((c) => c.events().length === 3);
    const lastSeen = first.events().at(-1)?.id as string;
    first.close();
    await first.closed;
    await write(250); // more than one replay page (200) while nobody listens

    const resumed = await connect(caller.key, `?since=${lastSeen}`);
    // More events while the replay runs: they must come once, after the missed ones.
    await write(30);
    await resumed.until((c) => c.events().length >= 280, 15_000, '280 events');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const got = resumed.events().map((e) => (e.data as { paymentId: string }).paymentId);
    assert.equal(got.length, 280);
    assert.deepEqual(got, written.slice(3));

    // The same through a subscribe message on an open connection.
    const again = await connect(caller.key);
    again.send({ type: 'subscribe', since: lastSeen, types: ['payment.received'] });
    await again.until((c) => c.events().length === 280, 15_000, 'replay by message');
    assert.deepEqual(
      again.events().map((e) => (e.data as { paymentId: string }).paymentId),
      written.slice(3),
    );
    resumed.close();
    again.close();
  });

  it('closes a consumer that does not read with 4008; it resumes from its last event and loses nothing', async () => {
    const small = await startTestGateway({ events: { config: { streamMaxBufferedBytes: 64 * 1024 } } });
    try {
      const address = await small.app.listen({ port: 0, host: '127.0.0.1' });
      const streamUrl = `${address.replace('http', 'ws')}/v1/payments/stream`;
      const caller = await small.newCaller('premium');
      const slow = await openStream(streamUrl, { headers: bearer(caller.key) });
      await slow.until((c) => c.messages.length > 0);
      slow.ws.pause(); // reads nothing from now on: the kernel buffers fill, then the server's queue
      const written: string[] = [];
      const filler = 'x'.repeat(32 * 1024);
      const hub = small.events?.hub;
      assert.ok(hub !== undefined);
      while (hub.subscriberCount(caller.accountId) > 0) {
        assert.ok(written.length < 3_000, 'the slow consumer was never dropped');
        const payment = await recordReceived(small.services.ledger, caller.accountId, {
          metadata: { filler },
        });
        written.push(payment.id);
        if (written.length % 20 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      // Payments after the drop: the resumed stream must bring them (events are dispatched as their
      // commit resolves, so the drop can come with the very last one written above).
      for (let i = 0; i < 3; i++) {
        written.push((await recordReceived(small.services.ledger, caller.accountId, {})).id);
      }
      slow.ws.resume();
      const { code } = await slow.closed;
      assert.equal(code, STREAM_CLOSE.TOO_SLOW);
      const received = slow.events().map((e) => (e.data as { paymentId: string }).paymentId);
      assert.ok(received.length < written.length, 'it was dropped before it got everything');
      assert.deepEqual(received, written.slice(0, received.length), 'what it got came in order');

      const lastId = slow.events().at(-1)?.id;
      const resumed = await openStream(`${streamUrl}${lastId === undefined ? '' : `?since=${lastId}`}`, {
        headers: bearer(caller.key),
      });
      await resumed.until((c) => c.events().length === written.length - received.length, 20_000, 'the rest');
      assert.deepEqual(
        resumed.events().map((e) => (e.data as { paymentId: string }).paymentId),
        written.slice(received.length),
      );
      resumed.close();
    } finally {
      await small.close();
    }
  });

  it('paces a replay to a client that reads slowly but steadily: all of it arrives, no 4008', async () => {
    const small = await startTestGateway({ events: { config: { streamMaxBufferedBytes: 128 * 1024 } } });
    try {
      const address = await small.app.listen({ port: 0, host: '127.0.0.1' });
      const caller = await small.newCaller('premium');
      const start = await recordReceived(small.services.ledger, caller.accountId);
      const since = (await small.store.events.listAfter(caller.accountId, 0, 1))[0]?.id;
      assert.equal(typeof since, 'string');
      // Events as big as metadata allows: a replay page of 200 of them is about 900 KB.
      const filler = 'x'.repeat(4_000);
      const written: string[] = [];
      for (let i = 0; i < 1_000; i++) {
        written.push(
          (await recordReceived(small.services.ledger, caller.accountId, { metadata: { filler } })).id,
        );
      }
      assert.ok(start.id !== written[0]);
      const reader = await openStream(`${address.replace('http', 'ws')}/v1/payments/stream?since=${since}`, {
        headers: bearer(caller.key),
      });
      let closed: { code: number } | undefined;
      void reader.closed.then((close) => {
        closed = close;
      });
      // Reads 5 ms of every 30 ms: slower than a replay writes, but it never stops reading.
      const deadline = Date.now() + 30_000;
      while (closed === undefined && reader.events().length < written.length && Date.now() < deadline) {
        reader.ws.pause();
        await new Promise((resolve) => setTimeout(resolve, 25));
        reader.ws.resume();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      assert.equal(closed, undefined, 'closed although it kept reading (before, 4008 after one page)');
      assert.deepEqual(
        reader.events().map((e) => (e.data as { paymentId: string }).paymentId),
        written,
      );
      reader.close();
    } finally {
      await small.close();
    }
  });

  it('closes with 4008 a client that keeps sending messages and never reads their answers', async () => {
    const small = await startTestGateway({ events: { config: { streamMaxBufferedBytes: 64 * 1024 } } });
    try {
      const address = await small.app.listen({ port: 0, host: '127.0.0.1' });
      const caller = await small.newCaller('premium');
      const client = await openStream(`${address.replace('http', 'ws')}/v1/payments/stream`, {
        headers: bearer(caller.key),
      });
      await client.until((c) => c.messages.length > 0);
      client.ws.pause();
      // 1,000 unknown fields fit in one 16 KiB message, and their error answer is four times bigger.
      const message: Record<string, unknown> = { type: 'subscribe' };
      for (let i = 0; i < 1_000; i++) message[`k${i}`] = 0;
      let sent = 0;
      while (small.events?.hub.subscriberCount(caller.accountId) !== 0) {
        assert.ok(sent < 2_000, 'answers were buffered without limit for a client that does not read');
        client.send(message);
        sent++;
        if (sent % 20 === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      client.ws.resume();
      const { code } = await client.closed;
      assert.equal(code, STREAM_CLOSE.TOO_SLOW);
    } finally {
      await small.close();
    }
  });

  it('stops reading a client that sends faster than its messages are handled (PostgreSQL), instead of queueing them in memory', {
    skip: SKIP_POSTGRES,
  }, async () => {
    const pg = await startTestGateway({ storage: await tempPostgres(), events: {} });
    try {
      const address = await pg.app.listen({ port: 0, host: '127.0.0.1' });
      const caller = await pg.newCaller('premium');
      await recordReceived(pg.services.ledger, caller.accountId);
      const since = (await pg.store.events.listAfter(caller.accountId, 0, 1))[0]?.id;
      // The client runs in its own process, so only the server's memory is measured here. It sends
      // 9 KB subscribes with `since` (each waits for a query) for 2 s, and reads every answer.
      const flood = `
        import { WebSocket } from 'ws';
        const ws = new WebSocket(process.env.STREAM_URL, { headers: { authorization: 'Bearer ' + process.env.STREAM_KEY } });
        await new Promise((resolve) => ws.once('open', resolve));
        let answers = 0;
        ws.on('message', () => { answers++; });
        const wallets = Array.from({ length: 100 }, (_, i) => ('W' + i).padEnd(90, 'x'));
        const message = JSON.stringify({ type: 'subscribe', since: process.env.STREAM_SINCE, wallets });
        const started = Date.now();
        while (Date.now() - started < 2000) {
          if (ws.bufferedAmount < 4e6) for (let i = 0; i < 100; i++) ws.send(message);
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
        console.log(JSON.stringify({ answers, open: ws.readyState === WebSocket.OPEN }));
        process.exit(0);`;
      const child = spawn(process.execPath, ['--input-type=module', '-e', flood], {
        env: {
          ...process.env,
          STREAM_URL: `${address.replace('http', 'ws')}/v1/payments/stream`,
          STREAM_KEY: caller.key,
          STREAM_SINCE: String(since),
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let output = '';
      child.stdout.on('data', (chunk) => {
        output += chunk;
      });
      const base = process.memoryUsage().arrayBuffers;
      let peak = 0;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().arrayBuffers - base);
      }, 10);
      await new Promise((resolve) => child.once('exit', resolve));
      clearInterval(sampler);
      const result = JSON.parse(output) as { answers: number; open: boolean };
      assert.ok(result.open, 'the connection stays open');
      assert.ok(result.answers > 0);
      // Before, the server read all of it and queued it: over a gigabyte in 2 s.
      assert.ok(
        peak < 64 * 1024 * 1024,
        `the server held ${Math.round(peak / 1e6)} MB of unhandled messages`,
      );
    } finally {
      await pg.close();
    }
  });

  it('holds at most STREAM_MAX_CONNECTIONS_PER_ACCOUNT streams of an account open: 429 on the upgrade, 4029 after auth', async () => {
    const capped = await startTestGateway({ events: { config: { streamMaxConnectionsPerAccount: 2 } } });
    try {
      const address = await capped.app.listen({ port: 0, host: '127.0.0.1' });
      const streamUrl = `${address.replace('http', 'ws')}/v1/payments/stream`;
      const caller = await capped.newCaller('premium');
      const other = await capped.newCaller('premium');
      const open = async (key: string) => {
        const client = await openStream(streamUrl, { headers: bearer(key) });
        await client.until((c) => c.messages.length > 0);
        return client;
      };
      // Opened all at once: the second check, where a connection is counted, holds the cap too.
      const attempts = await Promise.allSettled(Array.from({ length: 8 }, () => open(caller.key)));
      const opened = attempts.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
      const authenticated = opened.filter((c) => c.messages[0]?.type === 'authenticated');
      assert.equal(authenticated.length, 2, 'two of eight stay open');
      for (const client of opened.filter((c) => !authenticated.includes(c))) {
        assert.equal((await client.closed).code, STREAM_CLOSE.RATE_LIMITED);
      }
      await assert.rejects(open(caller.key), (error: { status: number; body: string }) => {
        assert.equal(error.status, 429);
        const body = JSON.parse(error.body);
        assert.equal(body.error.code, 'RATE_LIMIT_EXCEEDED');
        assert.match(body.error.message, /At most 2 payment streams .*STREAM_MAX_CONNECTIONS_PER_ACCOUNT/);
        return true;
      });
      const byMessage = await openStream(streamUrl);
      byMessage.send({ type: 'auth', apiKey: caller.key });
      assert.deepEqual(await byMessage.closed, {
        code: STREAM_CLOSE.RATE_LIMITED,
        reason: 'too many open streams for this account',
      });
      // Another account is not affected, and a closed stream frees its place.
      (await open(other.key)).close();
      authenticated[0]?.close();
      await authenticated[0]?.closed;
      const again = await open(caller.key);
      assert.equal(again.messages[0]?.type, 'authenticated');
      again.close();
      authenticated[1]?.close();
    } finally {
      await capped.close();
    }
  });

  it('drops a connection that stops answering pings, keeps one that answers, and says 1001 on shutdown', async () => {
    const quick = await startTestGateway({ events: { config: { streamHeartbeatMs: 100 } } });
    let closedByShutdown: Promise<{ code: number }> | undefined;
    try {
      const address = await quick.app.listen({ port: 0, host: '127.0.0.1' });
      const streamUrl = `${address.replace('http', 'ws')}/v1/payments/stream`;
      const caller = await quick.newCaller('premium');
      const silent = new StreamClient(
        new WebSocket(streamUrl, { headers: bearer(caller.key), autoPong: false }),
      );
      const healthy = await openStream(streamUrl, { headers: bearer(caller.key) });
      const started = Date.now();
      const { code } = await silent.closed;
      assert.equal(code, 1006, 'terminated without a close frame: it was not listening');
      assert.ok(Date.now() - started < 2_000);
      assert.equal(healthy.ws.readyState, WebSocket.OPEN, 'the one answering pings stays');
      closedByShutdown = healthy.closed;
    } finally {
      await quick.close();
    }
    assert.equal((await closedByShutdown)?.code, STREAM_CLOSE.GOING_AWAY);
  });

  it('closes an open stream whose key is revoked (4001) or whose plan loses the stream (4003) at the next heartbeat', async () => {
    const quick = await startTestGateway({ events: { config: { streamHeartbeatMs: 100 } } });
    try {
      const address = await quick.app.listen({ port: 0, host: '127.0.0.1' });
      const streamUrl = `${address.replace('http', 'ws')}/v1/payments/stream`;
      const caller = await quick.newCaller('premium');
      const second = await quick.accounts.createKey(caller.accountId, 'second');
      const open = async (key: string, byMessage: boolean) => {
        const client = await openStream(streamUrl, byMessage ? {} : { headers: bearer(key) });
        if (byMessage) client.send({ type: 'auth', apiKey: key });
        await client.until((c) => c.messages.some((m) => m.type === 'authenticated'));
        return client;
      };
      const [revoked, revokedByMessage, kept] = [
        await open(caller.key, false),
        await open(caller.key, true),
        await open(second.key, false),
      ];
      const closedWithin = (client: StreamClient, ms: number) =>
        Promise.race([
          client.closed,
          new Promise((resolve) => setTimeout(() => resolve('still open'), ms).unref()),
        ]);
      const [first] = await quick.accounts.listKeys(caller.accountId);
      assert.ok(first !== undefined && first.id !== second.record.id);
      await quick.accounts.revokeKey(first.id, caller.accountId);
      for (const client of [revoked, revokedByMessage]) {
        assert.deepEqual(await closedWithin(client, 3_000), {
          code: STREAM_CLOSE.UNAUTHORIZED,
          reason: 'API key revoked',
        });
      }
      // Before, they stayed open and went on receiving the account's payments.
      await recordReceived(quick.services.ledger, caller.accountId);
      await kept.until((c) => c.events().length === 1);
      assert.equal(revoked.events().length + revokedByMessage.events().length, 0);

      await quick.accounts.setPlan(caller.accountId, { plan: 'standard' });
      assert.deepEqual(await closedWithin(kept, 3_000), {
        code: STREAM_CLOSE.FORBIDDEN,
        reason: 'the standard plan does not include stream',
      });
    } finally {
      await quick.close();
    }
  });

  it('serves the AsyncAPI document of the stream beside /openapi.json', async () => {
    const response = await gw.app.inject({ method: 'GET', url: '/asyncapi.json' });
    assert.equal(response.statusCode, 200);
    const doc = response.json();
    assert.equal(doc.asyncapi, '3.0.0');
    assert.equal(doc.channels.payments.address, '/v1/payments/stream');
    assert.deepEqual(doc.channels.payments.messages.paymentEvent.payload.required, [
      'id',
      'type',
      'createdAt',
      'amount',
      'data',
    ]);
    assert.match(doc.info.description, /4008 TOO_SLOW/);
  });
});
