import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { nextAttemptAt, retryAfterMs } from '../../../src/events/webhooks/retry-schedule.ts';
import { ATTEMPT_TIMEOUT_MS, postWebhook } from '../../../src/events/webhooks/webhook-sender.ts';
import { LEASE_MS } from '../../../src/events/webhooks/webhook-worker.ts';
import { tempSqlite } from '../../support/databases.ts';
import { recordReceived } from '../../support/payment-events.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { WebhookReceiver } from '../../support/webhook-receiver.ts';

const EVENTS_FOR_TESTS = { allowPrivateOutboundUrls: true, webhookRetryBaseMs: 50 };

/** The endpoint's one delivery as its log on `gw` shows it, once `done` says it is settled for now. */
async function deliveryOnceSettled(
  gw: TestGateway,
  key: string,
  webhookId: string,
  done: (delivery: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  let delivery: Record<string, unknown> = {};
  for (let tries = 0; !done(delivery) && tries < 100; tries++) {
    const log = await gw.app.inject({
      method: 'GET',
      url: `/webhooks/${webhookId}/deliveries`,
      headers: bearer(key),
    });
    assert.equal(log.statusCode, 200);
    delivery = log.json().deliveries[0] ?? {};
    if (!done(delivery)) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return delivery;
}

describe('webhooks', () => {
  let gw: TestGateway;

  before(async () => {
    gw = await startTestGateway({ events: { config: EVENTS_FOR_TESTS } });
  });
  after(() => gw.close());

  const create = (key: string, payload: unknown) =>
    gw.app.inject({ method: 'POST', url: '/webhooks', headers: bearer(key), payload: payload as object });
  const redeliver = (key: string, webhookId: string, deliveryId: unknown) =>
    gw.app.inject({
      method: 'POST',
      url: `/webhooks/${webhookId}/deliveries/${deliveryId}/redeliver`,
      headers: bearer(key),
    });

  it('signs deliveries per Standard Webhooks; a receiver failing three times gets the event on the fourth try', async () => {
    const receiver = new WebhookReceiver((n) => (n <= 3 ? 500 : 204));
    const url = await receiver.start();
    try {
      const caller = await gw.newCaller('premium');
      const created = await create(caller.key, { url });
      assert.equal(created.statusCode, 200, created.body);
      const webhook = created.json();
      assert.match(webhook.id, /^whk_/);
      assert.match(webhook.secret, /^whsec_/);
      assert.deepEqual(webhook.eventTypes, []);
      receiver.secret = webhook.secret;

      const payment = await recordReceived(gw.services.ledger, caller.accountId, { amount: 250_000_000n });
      await receiver.until(4);
      const [first, , , last] = receiver.received;
      assert.ok(first !== undefined && last !== undefined);
      assert.deepEqual(
        receiver.received.map((r) => r.answeredWith),
        [500, 500, 500, 204],
      );
      const message = last.verified as Record<string, unknown>;
      assert.ok(message !== undefined, 'the standardwebhooks library accepts the signature');
      assert.equal(message.type, 'payment.received');
      assert.equal(message.amount, 0.25);
      assert.equal((message.data as { paymentId: string }).paymentId, payment.id);
      assert.equal(last.headers['webhook-id'], message.id, 'webhook-id is the event id');
      assert.equal(first.headers['webhook-id'], last.headers['webhook-id'], 'the same id on every attempt');
      // A signature made with another secret is refused by the same library.
      assert.throws(() =>
        new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(last.body, last.headers),
      );

      // The receiver answered; the worker writes the outcome right after.
      const delivery = await deliveryOnceSettled(gw, caller.key, webhook.id, (d) => d.status === 'succeeded');
      assert.equal(delivery.status, 'succeeded');
      assert.equal(delivery.attempts, 4);
      assert.equal(delivery.lastStatusCode, 204);
      assert.equal(delivery.eventId, message.id);
      assert.equal(delivery.nextAttemptAt, null);

      const redelivered = await redeliver(caller.key, webhook.id, delivery.id);
      assert.equal(redelivered.statusCode, 200, redelivered.body);
      await receiver.until(5);
      assert.equal(receiver.received[4]?.headers['webhook-id'], message.id);
      assert.ok(receiver.received[4]?.verified !== undefined);
    } finally {
      await receiver.close();
    }
  });

  /** A Premium caller whose new endpoint at `receiver` got its first attempt, of one payment's event. */
  async function firstAttemptAt(receiver: WebhookReceiver) {
    const url = await receiver.start();
    const caller = await gw.newCaller('premium');
    const webhook = (await create(caller.key, { url })).json();
    await recordReceived(gw.services.ledger, caller.accountId);
    await receiver.until(1);
    return { caller, webhook };
  }

  const deliveriesOf = async (key: string, webhookId: string) =>
    (
      await gw.app.inject({ method: 'GET', url: `/webhooks/${webhookId}/deliveries`, headers: bearer(key) })
    ).json().deliveries as Record<string, unknown>[];
  const listOf = async (key: string) =>
    (await gw.app.inject({ method: 'GET', url: '/webhooks', headers: bearer(key) })).json()
      .webhooks as Record<string, unknown>[];
  const patch = (key: string, webhookId: string, payload: unknown) =>
    gw.app.inject({
      method: 'PATCH',
      url: `/webhooks/${webhookId}`,
      headers: bearer(key),
      payload: payload as object,
    });
  const paymentIdOf = (request: { body: string } | undefined) =>
    (JSON.parse(request?.body ?? '{}') as { data?: { paymentId?: string } }).data?.paymentId;

  it('disables an endpoint that answers 410 Gone: that delivery and its pending ones are failed, later events are not sent', async () => {
    // The first event's endpoint asks for a minute's wait (its delivery stays pending); the second's says 410.
    const receiver = new WebhookReceiver((n) =>
      n === 1 ? { status: 503, headers: { 'retry-after': '60' } } : 410,
    );
    try {
      const { caller, webhook } = await firstAttemptAt(receiver);
      const waiting = await deliveryOnceSettled(gw, caller.key, webhook.id, (d) => d.lastStatusCode === 503);
      assert.equal(waiting.status, 'pending');
      await recordReceived(gw.services.ledger, caller.accountId);
      await receiver.until(2);
      const gone = await deliveryOnceSettled(gw, caller.key, webhook.id, (d) => d.status === 'failed');
      assert.equal(gone.attempts, 1);
      assert.equal(gone.lastStatusCode, 410);
      assert.equal(gone.nextAttemptAt, null);
      assert.equal(gone.lastError, 'answered HTTP 410 Gone: not retried, and the endpoint was disabled');

      const [listed] = await listOf(caller.key);
      assert.equal(listed?.enabled, false);
      assert.equal(listed?.disabledReason, `answered HTTP 410 Gone to delivery ${gone.id}`);
      assert.equal(listed?.disabledAt, gone.lastAttemptAt);
      const [, pending] = await deliveriesOf(caller.key, webhook.id);
      assert.deepEqual(
        pending,
        {
          ...waiting,
          status: 'failed',
          nextAttemptAt: null,
          lastError: 'not sent: the endpoint was disabled',
        },
        'the pending delivery is failed unsent, its last attempt as it was',
      );

      // An event while it is disabled gets no delivery at all.
      await recordReceived(gw.services.ledger, caller.accountId);
      // The retry base is 50 ms here: a retried delivery would have come back many times by now.
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(receiver.received.length, 2);
      assert.equal((await deliveriesOf(caller.key, webhook.id)).length, 2);
      // Nor is a redelivery sent while it is disabled: refused, with the way out.
      const refused = await redeliver(caller.key, webhook.id, gone.id);
      assert.equal(refused.statusCode, 400);
      assert.deepEqual(refused.json().error.details, {
        id: `webhook ${webhook.id} is disabled (answered HTTP 410 Gone to delivery ${gone.id}); enable it first`,
      });
    } finally {
      await receiver.close();
    }
  });

  it('enabled again, an endpoint receives the events from then on, none from while it was disabled, and redeliveries asked for', async () => {
    const receiver = new WebhookReceiver((n) => (n === 1 ? 410 : 204));
    try {
      const { caller, webhook } = await firstAttemptAt(receiver);
      const gone = await deliveryOnceSettled(gw, caller.key, webhook.id, (d) => d.status === 'failed');
      assert.equal((await listOf(caller.key))[0]?.enabled, false);
      await recordReceived(gw.services.ledger, caller.accountId);
      // Let the fan-out pass the event written while disabled before enabling.
      await new Promise((resolve) => setTimeout(resolve, 300));

      const enabled = await patch(caller.key, webhook.id, { enabled: true });
      assert.equal(enabled.statusCode, 200, enabled.body);
      assert.deepEqual(enabled.json(), {
        id: webhook.id,
        url: webhook.url,
        eventTypes: [],
        createdAt: webhook.createdAt,
        enabled: true,
        disabledAt: null,
        disabledReason: null,
      });
      assert.deepEqual(await listOf(caller.key), [enabled.json()]);
      const after = await recordReceived(gw.services.ledger, caller.accountId);
      await receiver.until(2);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(receiver.received.length, 2, 'the event written while disabled is not sent');
      assert.equal(paymentIdOf(receiver.received[1]), after.id);

      // A delivery asked for by hand is sent: the one answered 410.
      const redelivered = await redeliver(caller.key, webhook.id, gone.id);
      assert.equal(redelivered.statusCode, 200, redelivered.body);
      await receiver.until(3);
      assert.equal(receiver.received[2]?.headers['webhook-id'], gone.eventId);
    } finally {
      await receiver.close();
    }
  });

  it('lets the account disable an endpoint and enable it again; asking for the state it is in changes nothing', async () => {
    const caller = await gw.newCaller('premium');
    const webhook = (await create(caller.key, { url: 'http://127.0.0.1:9/a' })).json();
    const before = Date.now();
    const disabled = await patch(caller.key, webhook.id, { enabled: false });
    assert.equal(disabled.statusCode, 200, disabled.body);
    assert.equal(disabled.json().enabled, false);
    assert.equal(disabled.json().disabledReason, 'disabled by its account');
    assert.ok(disabled.json().disabledAt >= before);
    const again = await patch(caller.key, webhook.id, { enabled: false });
    assert.deepEqual(again.json(), disabled.json(), 'disabled already: its time and reason stay');
    assert.equal((await patch(caller.key, webhook.id, { enabled: true })).json().enabled, true);
    assert.equal((await patch(caller.key, webhook.id, { enabled: true })).json().enabled, true);

    for (const payload of [{}, { enabled: 'yes' }, { enabled: true, url: 'http://127.0.0.1:9/b' }]) {
      const refused = await patch(caller.key, webhook.id, payload);
      assert.equal(refused.statusCode, 400, JSON.stringify(payload));
      assert.equal(refused.json().error.code, 'INVALID_PARAMETERS');
    }
  });

  it("waits as long as a 429's Retry-After asks before trying again, when that is longer than the schedule", async () => {
    const receiver = new WebhookReceiver((n) =>
      n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : 204,
    );
    try {
      const { caller, webhook } = await firstAttemptAt(receiver);
      const pending = await deliveryOnceSettled(gw, caller.key, webhook.id, (d) => d.lastStatusCode === 429);
      assert.equal(pending.status, 'pending');
      await receiver.until(2, 5_000);
      const [first, second] = receiver.received;
      assert.ok(first !== undefined && second !== undefined);
      // The schedule alone (base 50 ms here) would have tried again after 50 ms.
      assert.ok(second.at - first.at >= 950, `tried again after ${second.at - first.at} ms`);
      const done = await deliveryOnceSettled(gw, caller.key, webhook.id, (d) => d.status === 'succeeded');
      assert.equal(done.attempts, 2);
    } finally {
      await receiver.close();
    }
  });

  it('postpones a delivery that fails inside the gateway like a failed attempt, then sends it', async () => {
    const receiver = new WebhookReceiver();
    const url = await receiver.start();
    const endpoints = gw.store.webhooks;
    const { get } = endpoints;
    let faults = 0;
    // The first attempt cannot read its endpoint: a fault of the gateway's, not of the receiver's.
    endpoints.get = async (id) => {
      if (faults++ === 0) throw new Error('storage unavailable');
      return get.call(endpoints, id);
    };
    try {
      const caller = await gw.newCaller('premium');
      const webhook = (await create(caller.key, { url })).json();
      await recordReceived(gw.services.ledger, caller.accountId);
      await receiver.until(1, 5_000);
      const done = await deliveryOnceSettled(gw, caller.key, webhook.id, (d) => d.status === 'succeeded');
      assert.equal(done.attempts, 2, 'the fault counted as an attempt');
      assert.equal(receiver.received.length, 1, 'nothing was sent by the failed one');
      assert.ok(faults >= 2);
    } finally {
      endpoints.get = get;
      await receiver.close();
    }
  });

  it('fans out the events of many commits in one round: rounds woken by events begin at most every 50 ms', async () => {
    const receiver = new WebhookReceiver();
    const url = await receiver.start();
    const worker = gw.events?.worker;
    assert.ok(worker !== undefined);
    const { fanOut } = worker;
    let rounds = 0;
    worker.fanOut = () => {
      rounds++;
      return fanOut.call(worker);
    };
    try {
      const caller = await gw.newCaller('premium');
      assert.equal((await create(caller.key, { url })).statusCode, 200);
      await new Promise((resolve) => setTimeout(resolve, 100));
      rounds = 0;
      const started = performance.now();
      // A commit every few milliseconds: each one used to wake a round of its own.
      for (let i = 0; i < 30; i++) {
        await recordReceived(gw.services.ledger, caller.accountId);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await receiver.until(30, 10_000);
      const elapsed = performance.now() - started;
      assert.ok(
        rounds <= Math.ceil(elapsed / 50) + 2,
        `${rounds} rounds in ${Math.round(elapsed)} ms for 30 commits`,
      );
      assert.equal(receiver.received.length, 30, 'every event delivered');
    } finally {
      worker.fanOut = fanOut;
      await receiver.close();
    }
  });

  it('delivers only the event types asked for, and nothing after the endpoint is deleted', async () => {
    const receiver = new WebhookReceiver();
    const url = await receiver.start();
    try {
      const caller = await gw.newCaller('premium');
      const webhook = (await create(caller.key, { url, eventTypes: ['payment.confirmed'] })).json();
      receiver.secret = webhook.secret;
      const payment = await recordReceived(gw.services.ledger, caller.accountId);
      await gw.services.ledger.move(payment, 'confirmed', { confirmedAt: Date.now() });
      await receiver.until(1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.deepEqual(
        receiver.received.map((r) => (r.verified as { type: string }).type),
        ['payment.confirmed'],
      );
      const deleted = await gw.app.inject({
        method: 'DELETE',
        url: `/webhooks/${webhook.id}`,
        headers: bearer(caller.key),
      });
      assert.deepEqual(deleted.json(), { id: webhook.id, deleted: true });
      const again = await recordReceived(gw.services.ledger, caller.accountId);
      await gw.services.ledger.move(again, 'confirmed', { confirmedAt: Date.now() });
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(receiver.received.length, 1);
    } finally {
      await receiver.close();
    }
  });

  it('lists an account its own endpoints only, never secrets; another account sees 404', async () => {
    const owner = await gw.newCaller('premium');
    const other = await gw.newCaller('enterprise', 5_000);
    const webhook = (await create(owner.key, { url: 'http://127.0.0.1:9/a' })).json();
    const listed = await gw.app.inject({ method: 'GET', url: '/webhooks', headers: bearer(owner.key) });
    assert.deepEqual(listed.json(), {
      webhooks: [
        {
          id: webhook.id,
          url: 'http://127.0.0.1:9/a',
          eventTypes: [],
          createdAt: webhook.createdAt,
          enabled: true,
          disabledAt: null,
          disabledReason: null,
        },
      ],
    });
    const othersList = await gw.app.inject({ method: 'GET', url: '/webhooks', headers: bearer(other.key) });
    assert.deepEqual(othersList.json(), { webhooks: [] });
    for (const [method, path] of [
      ['DELETE', `/webhooks/${webhook.id}`],
      ['GET', `/webhooks/${webhook.id}/deliveries`],
      ['PATCH', `/webhooks/${webhook.id}`],
    ] as const) {
      const response = await gw.app.inject({
        method,
        url: path,
        headers: bearer(other.key),
        ...(method === 'PATCH' ? { payload: { enabled: false } } : {}),
      });
      assert.equal(response.statusCode, 404, `${method} ${path}`);
      assert.equal(response.json().error.code, 'NOT_FOUND');
    }
    assert.equal((await listOf(owner.key))[0]?.enabled, true, 'left as it was');
  });

  it('documents the webhook routes in /openapi.json', async () => {
    const doc = (await gw.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const [path, method] of [
      ['/webhooks', 'post'],
      ['/webhooks', 'get'],
      ['/webhooks/{id}', 'delete'],
      ['/webhooks/{id}', 'patch'],
      ['/webhooks/{id}/deliveries', 'get'],
      ['/webhooks/{id}/deliveries/{deliveryId}/redeliver', 'post'],
    ]) {
      const operation = doc.paths[path as string]?.[method as string];
      assert.ok(operation !== undefined, `${method} ${path}`);
      assert.deepEqual(operation.tags, ['webhooks']);
      assert.deepEqual(operation.security, [{ bearerAuth: [] }]);
    }
  });

  it('refuses bad input with per-field details, and standard plans with 403', async () => {
    const caller = await gw.newCaller('premium');
    const badType = await create(caller.key, { url: 'https://example.com/h', eventTypes: ['payment.nope'] });
    assert.equal(badType.statusCode, 400);
    assert.equal(badType.json().error.code, 'INVALID_PARAMETERS');
    assert.ok(Object.keys(badType.json().error.details).some((k) => k.startsWith('eventTypes')));
    const notUrl = await create(caller.key, { url: 'not a url' });
    assert.deepEqual(notUrl.json().error.details, { url: 'must be an absolute URL' });
    const unknownField = await create(caller.key, { url: 'https://example.com/h', secret: 'mine' });
    assert.equal(unknownField.statusCode, 400);
    const badId = await gw.app.inject({
      method: 'DELETE',
      url: '/webhooks/whk_nope',
      headers: bearer(caller.key),
    });
    assert.equal(badId.statusCode, 400);
    assert.ok('id' in badId.json().error.details);

    const standard = await gw.newCaller('standard');
    const refused = await create(standard.key, { url: 'https://example.com/h' });
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json().error.code, 'FORBIDDEN');
  });

  it('keeps a URL as parsed, the address deliveries go to: spaces trimmed, NUL and non-ASCII percent-encoded', async () => {
    // A NUL kept as sent failed the insert on PostgreSQL (text refuses it) with 500.
    const caller = await gw.newCaller('premium');
    for (const [url, parsed] of [
      [' http://127.0.0.1:9/hook\u0000?q=ü ', 'http://127.0.0.1:9/hook%00?q=%C3%BC'],
      ['HTTP:127.0.0.1:9', 'http://127.0.0.1:9/'],
    ]) {
      const created = await create(caller.key, { url });
      assert.equal(created.statusCode, 200, created.body);
      assert.equal(created.json().url, parsed);
    }
    const listed = await gw.app.inject({ method: 'GET', url: '/webhooks', headers: bearer(caller.key) });
    assert.deepEqual(
      listed
        .json()
        .webhooks.map((w: { url: string }) => w.url)
        .sort(),
      ['http://127.0.0.1:9/', 'http://127.0.0.1:9/hook%00?q=%C3%BC'],
    );
  });

  it('refuses loopback, private and link-local URLs unless ALLOW_PRIVATE_OUTBOUND_URLS is set', async () => {
    const strict = await startTestGateway({ events: {} });
    try {
      const caller = await strict.newCaller('premium');
      for (const [url, reason] of [
        ['http://127.0.0.1:8080/h', 'must be an https:// URL'],
        ['https://127.0.0.1/h', 'must not point at a private, loopback or link-local address'],
        [
          'https://169.254.169.254/latest/meta-data',
          'must not point at a private, loopback or link-local address',
        ],
        ['https://[::1]/h', 'must not point at a private, loopback or link-local address'],
        ['https://localhost/h', 'must not point at a private, loopback or link-local address'],
      ]) {
        const response = await strict.app.inject({
          method: 'POST',
          url: '/webhooks',
          headers: bearer(caller.key),
          payload: { url },
        });
        assert.equal(response.statusCode, 400, url);
        assert.deepEqual(response.json().error.details, { url: reason }, url);
      }
    } finally {
      await strict.close();
    }
  });
  it('gives up on an endpoint that sends its answer a byte at a time after 10 s in all; a 2xx status in time is a success', async () => {
    const trickle = (socket: Socket, text: string) => {
      let at = 0;
      const timer = setInterval(() => {
        if (at < text.length) socket.write(text.charAt(at++));
      }, 1_000);
      socket.on('close', () => clearInterval(timer));
    };
    const receiver = createServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', (request) => {
        if (request.toString().startsWith('POST /slow-status')) {
          trickle(socket, 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
        } else {
          socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n');
          trickle(socket, 'x'.repeat(100));
        }
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const { port } = receiver.address() as { port: number };
    try {
      const started = Date.now();
      const [slowStatus, slowBody] = await Promise.all([
        postWebhook(`http://127.0.0.1:${port}/slow-status`, {}, '{}', { allowPrivate: true }),
        postWebhook(`http://127.0.0.1:${port}/slow-body`, {}, '{}', { allowPrivate: true }),
      ]);
      assert.deepEqual(slowStatus, { ok: false, statusCode: null, error: 'no answer within 10 s' });
      assert.deepEqual(slowBody, { ok: true, statusCode: 200, error: null });
      assert.ok(Date.now() - started < 12_000, `took ${Date.now() - started} ms`);
    } finally {
      receiver.close();
    }
  });

  it('counts resolving the host into the time of an attempt, and sends nothing once that time is up', async () => {
    // The delivery lease is sized from the bound: an attempt past it could overlap another instance's.
    assert.equal(ATTEMPT_TIMEOUT_MS, 10_000);
    const receiver = new WebhookReceiver();
    const url = new URL(await receiver.start());
    try {
      const slowResolver = async () => {
        await new Promise((resolve) => setTimeout(resolve, 400));
        return [{ address: '127.0.0.1', family: 4 }];
      };
      const started = Date.now();
      const outcome = await postWebhook(
        `http://receiver.test:${url.port}/hooks`,
        {},
        '{}',
        { allowPrivate: true },
        {
          timeoutMs: 200,
          resolve: slowResolver,
        },
      );
      assert.deepEqual(outcome, { ok: false, statusCode: null, error: 'no answer within 0.2 s' });
      assert.ok(Date.now() - started < 350, `took ${Date.now() - started} ms`);
      await new Promise((resolve) => setTimeout(resolve, 400));
      assert.equal(receiver.received.length, 0, 'nothing sent after the attempt ended');

      const inTime = await postWebhook(
        `http://receiver.test:${url.port}/hooks`,
        {},
        '{}',
        { allowPrivate: true },
        {
          timeoutMs: 1_000,
          resolve: slowResolver,
        },
      );
      assert.deepEqual(inTime, { ok: true, statusCode: 200, error: null });
    } finally {
      await receiver.close();
    }
  });

  it('hands a delivery back unsent when too little of its lease is left for a whole attempt (slow storage), and sends it under a new lease', async () => {
    const receiver = new WebhookReceiver();
    const url = await receiver.start();
    const deliveries = gw.store.webhookDeliveries;
    const leaseDue = deliveries.leaseDue;
    const leases: string[] = [];
    try {
      const caller = await gw.newCaller('premium');
      const webhook = (await create(caller.key, { url })).json();
      // The first lease of its delivery comes back 2.5 s late: less than the attempt's 10 s and a margin
      // are left of it.
      deliveries.leaseDue = async (...args) => {
        const leased = await leaseDue.apply(deliveries, args);
        const mine = leased.find((d) => d.webhookId === webhook.id);
        if (mine !== undefined) {
          leases.push(mine.id);
          if (leases.length === 1) await new Promise((resolve) => setTimeout(resolve, 2_500));
        }
        return leased;
      };
      await recordReceived(gw.services.ledger, caller.accountId);
      await receiver.until(1, 8_000);
      const delivery = await deliveryOnceSettled(gw, caller.key, webhook.id, (d) => d.status === 'succeeded');
      assert.equal(delivery.attempts, 1);
      assert.deepEqual(leases, [delivery.id, delivery.id], 'leased twice: handed back once, unsent');
      assert.equal(receiver.received.length, 1);
    } finally {
      deliveries.leaseDue = leaseDue;
      await receiver.close();
    }
  });
});

/**
 * Two instances on one SQLite file, as two `gate402 serve` processes on one DATA_DIR. While one attempts
 * a delivery (leased for the attempt's bound and a margin: as long as a worker that died mid-attempt
 * holds it), the delivery stays pending and past due; the other instance must wait for the lease, not
 * look again, and take the delivery over when the lease ends.
 */
describe('webhooks on two instances sharing storage', () => {
  let a: TestGateway;
  let b: TestGateway;

  before(async () => {
    const storage = tempSqlite();
    a = await startTestGateway({ storage, disposeStorage: false, events: { config: EVENTS_FOR_TESTS } });
    b = await startTestGateway({ storage, masterKey: a.masterKey, events: { config: EVENTS_FOR_TESTS } });
  });
  after(async () => {
    await a?.close();
    await b?.close();
  });

  it('while one instance attempts a delivery, the other looks at the queue once per poll, not every few milliseconds', async () => {
    // Answers 200 after 2 s: the attempt is in flight, leased to one instance, all that time.
    const receiver = new WebhookReceiver(() => 200, 2_000);
    const url = await receiver.start();
    try {
      const caller = await a.newCaller('premium');
      const created = await a.app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: bearer(caller.key),
        payload: { url },
      });
      assert.equal(created.statusCode, 200, created.body);
      await recordReceived(a.services.ledger, caller.accountId);
      await receiver.until(1);

      // Each of the instances' rounds ends by asking when the next delivery is due; count them.
      let looks = 0;
      const restore = [a, b].map(({ store }) => {
        const deliveries = store.webhookDeliveries;
        const nextDueAt = deliveries.nextDueAt;
        deliveries.nextDueAt = () => {
          looks++;
          return nextDueAt.call(deliveries);
        };
        return () => {
          deliveries.nextDueAt = nextDueAt;
        };
      });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      for (const undo of restore) undo();
      // EVENTS_POLL_MS is a second: the idle instance looks at most twice in 1.5 s. It looked every 5 ms
      // (hundreds of rounds, each a write transaction on the shared file) while the delivery was leased.
      assert.ok(looks <= 3, `${looks} rounds in 1.5 s while the other instance attempted the delivery`);

      const delivery = await deliveryOnceSettled(
        b,
        caller.key,
        created.json().id,
        (d) => d.status === 'succeeded',
      );
      assert.equal(delivery.status, 'succeeded');
      assert.equal(delivery.attempts, 1);
      assert.equal(receiver.received.length, 1, 'sent once');
    } finally {
      await receiver.close();
    }
  });

  it('sends the delivery of an instance that died mid-attempt soon after that attempt could have ended, never while it could still run', async () => {
    assert.equal(LEASE_MS, 15_000, 'the attempt (10 s), the time to start it and a margin');
    // The first request is never answered: the instance sending it dies while it waits.
    const receiver = new WebhookReceiver((n) => (n === 1 ? { status: 200, delayMs: 120_000 } : 204));
    const url = await receiver.start();
    // Only `a` attempts at first, so it is `a` that dies holding the lease.
    await b.events?.worker.stop();
    const deliveries = a.store.webhookDeliveries;
    const { recordAttempt, leaseDue } = deliveries;
    let revive = () => {};
    try {
      const caller = await a.newCaller('premium');
      const created = await a.app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: bearer(caller.key),
        payload: { url },
      });
      await recordReceived(a.services.ledger, caller.accountId);
      await receiver.until(1);
      // `a` dies as a SIGKILL leaves it: it writes nothing more and takes no more leases.
      const dead = new Promise<void>((resolve) => {
        revive = resolve;
      });
      deliveries.recordAttempt = async () => {
        await dead;
        return false;
      };
      deliveries.leaseDue = async () => [];
      b.events?.worker.start();

      // With the old one-minute lease, the survivor waited a minute.
      await receiver.until(2, LEASE_MS + 5_000);
      const [first, second] = receiver.received;
      assert.ok(first !== undefined && second !== undefined);
      const waited = second.at - first.at;
      assert.ok(waited >= ATTEMPT_TIMEOUT_MS && waited < LEASE_MS + 2_000, `sent again after ${waited} ms`);
      assert.ok(
        first.closedAt !== undefined && first.closedAt <= second.at,
        'the dead instance’s attempt was over before the survivor’s began',
      );
      const delivery = await deliveryOnceSettled(
        b,
        caller.key,
        created.json().id,
        (d) => d.status === 'succeeded',
      );
      assert.equal(delivery.lastStatusCode, 204);
      assert.equal(receiver.received.length, 2);
    } finally {
      revive();
      deliveries.recordAttempt = recordAttempt;
      deliveries.leaseDue = leaseDue;
      await receiver.close();
    }
  });
});

describe('webhook retry schedule', () => {
  it('retries after 5 s, doubling up to an hour, for 24 h exactly: the last attempt is at 24 h, then the delivery is failed', () => {
    const HOUR = 3_600_000;
    // A delivery created at 0 whose endpoint never answers 2xx, attempted each time it is due.
    const attemptsAt: number[] = [];
    let at: number | undefined = 0;
    while (at !== undefined) {
      attemptsAt.push(at);
      at = nextAttemptAt(attemptsAt.length, 0, at, 5_000, 24 * HOUR);
    }
    const waits = attemptsAt.slice(1).map((t, i) => t - (attemptsAt[i] as number));
    assert.deepEqual(
      waits.slice(0, 11),
      [5, 10, 20, 40, 80, 160, 320, 640, 1_280, 2_560, 3_600].map((s) => s * 1_000),
    );
    assert.ok(waits.slice(11, -1).every((w) => w === HOUR));
    // The last attempt is made when the 24 hours end, not up to an hour after: at 24 h 25 min the
    // delivery was still pending, its next attempt due after the retry period README promises.
    assert.equal(attemptsAt.at(-1), 24 * HOUR);
    assert.ok(attemptsAt.every((t) => t <= 24 * HOUR));
    assert.equal(attemptsAt.length, 34);
  });

  it("keeps an endpoint's Retry-After when it asks for longer than the schedule, up to an hour and within the 24 h", () => {
    const HOUR = 3_600_000;
    const now = 10 * HOUR;
    // Second attempt: the schedule says 10 s.
    assert.equal(nextAttemptAt(2, 0, now, 5_000, 24 * HOUR, 120_000), now + 120_000);
    assert.equal(nextAttemptAt(2, 0, now, 5_000, 24 * HOUR, 1_000), now + 10_000, 'shorter: the schedule');
    assert.equal(nextAttemptAt(2, 0, now, 5_000, 24 * HOUR, 100 * HOUR), now + HOUR, 'at most an hour');
    assert.equal(nextAttemptAt(2, 0, 23.9 * HOUR, 5_000, 24 * HOUR, HOUR), 24 * HOUR, 'not past 24 h');
  });

  it('reads Retry-After as whole seconds or an HTTP date, and nothing else', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    assert.equal(retryAfterMs('120', now), 120_000);
    assert.equal(retryAfterMs(' 0 ', now), 0);
    assert.equal(retryAfterMs('Mon, 23 Nov 2026 10:05:00 GMT', now), 300_000);
    assert.equal(retryAfterMs('Mon, 23 Nov 2026 09:00:00 GMT', now), 0, 'a date past is no wait');
    for (const odd of [undefined, '', '-5', '1.5', 'soon', '2026-11-23T10:05:00Z', '9'.repeat(40)]) {
      assert.equal(retryAfterMs(odd, now), undefined, String(odd));
    }
  });
});
