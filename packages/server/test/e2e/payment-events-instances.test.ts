import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { REDIS_URL, SKIP_POSTGRES, SKIP_REDIS, tempPostgres } from '../support/databases.ts';
import { recordReceived } from '../support/payment-events.ts';
import { openStream } from '../support/stream-client.ts';
import { bearer, startTestGateway, type TestGateway } from '../support/test-gateway.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

const skip = SKIP_POSTGRES || SKIP_REDIS;

/**
 * Two gateway instances on one PostgreSQL schema and one Redis. The outbox poll is set to a minute, so
 * an event written on B reaches A's subscribers promptly only through the Redis wake-up.
 */
describe('payment events across two instances (PostgreSQL + Redis)', { skip }, () => {
  let a: TestGateway;
  let b: TestGateway;
  let streamUrl: string;

  before(async () => {
    const storage = await tempPostgres();
    const events = {
      redisChannel: `gate402:test:${randomBytes(4).toString('hex')}`,
      config: {
        redisUrl: REDIS_URL,
        eventsPollMs: 60_000,
        allowPrivateOutboundUrls: true,
        webhookRetryBaseMs: 50,
      },
    };
    a = await startTestGateway({ storage, disposeStorage: false, events });
    b = await startTestGateway({ storage, masterKey: a.masterKey, events });
    const address = await a.app.listen({ port: 0, host: '127.0.0.1' });
    streamUrl = `${address.replace('http', 'ws')}/v1/payments/stream`;
  });
  after(async () => {
    await a?.close();
    await b?.close();
  });

  it('a subscriber on instance A receives, at once, the payments recorded on instance B', async () => {
    const caller = await a.newCaller('premium');
    const stream = await openStream(streamUrl, { headers: bearer(caller.key) });
    await stream.until((c) => c.messages.some((m) => m.type === 'authenticated'));
    const started = Date.now();
    const written: string[] = [];
    for (let i = 0; i < 5; i++) {
      written.push((await recordReceived(b.services.ledger, caller.accountId)).id);
    }
    await stream.until((c) => c.events().length === 5, 5_000, 'five events from B');
    assert.ok(Date.now() - started < 5_000, 'well before the one-minute poll');
    assert.deepEqual(
      stream.events().map((e) => (e.data as { paymentId: string }).paymentId),
      written,
    );
    stream.close();
  });

  it('resuming with since on either instance while both record payments: every event once, in order', async () => {
    const caller = await a.newCaller('premium');
    const urls = [
      streamUrl,
      `${(await b.app.listen({ port: 0, host: '127.0.0.1' })).replace('http', 'ws')}/v1/payments/stream`,
    ];
    await recordReceived(a.services.ledger, caller.accountId);
    let last = (await a.store.events.listAfter(caller.accountId, 0, 1))[0]?.id;
    const before = last;
    let writing = true;
    // Four writers, two on each instance, so seqs come from concurrent transactions on both.
    const writers = [a, a, b, b].map(async (gw) => {
      while (writing) await recordReceived(gw.services.ledger, caller.accountId);
    });
    const got: string[] = [];
    try {
      // Each connection replays from the last id the previous one got, then takes live events for a
      // moment; the switch from replay to live happens under load every time.
      for (let round = 0; round < 12; round++) {
        const client = await openStream(`${urls[round % 2]}?since=${last}`, { headers: bearer(caller.key) });
        await new Promise((resolve) => setTimeout(resolve, 30 + round * 10));
        client.ws.terminate();
        await client.closed;
        const ids = client.events().map((e) => String(e.id));
        got.push(...ids);
        last = ids.at(-1) ?? last;
      }
    } finally {
      writing = false;
      await Promise.all(writers);
    }
    const outbox = (await a.store.events.listAfter(caller.accountId, 0, 100_000)).map((e) => e.id);
    const rest = await openStream(`${urls[0]}?since=${last}`, { headers: bearer(caller.key) });
    const missing = outbox.length - 1 - got.length;
    await rest.until((c) => c.events().length >= missing, 10_000, `the last ${missing} events`);
    got.push(...rest.events().map((e) => String(e.id)));
    rest.close();
    assert.ok(got.length > 100, `only ${got.length} events were written meanwhile`);
    assert.equal(outbox[0], before);
    assert.deepEqual(got, outbox.slice(1), 'every event once, in seq order');
  });

  it('delivers each webhook event once while both instances run delivery workers', async () => {
    const receiver = new WebhookReceiver();
    const url = await receiver.start();
    try {
      const caller = await a.newCaller('premium');
      const created = await a.app.inject({
        method: 'POST',
        url: '/webhooks',
        headers: bearer(caller.key),
        payload: { url },
      });
      receiver.secret = created.json().secret;
      const written: string[] = [];
      for (let i = 0; i < 20; i++) {
        const via = i % 2 === 0 ? a : b;
        written.push((await recordReceived(via.services.ledger, caller.accountId)).id);
      }
      await receiver.until(20);
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(receiver.received.length, 20, 'no delivery attempted twice');
      const delivered = receiver.received.map(
        (r) => (r.verified as { data: { paymentId: string } }).data.paymentId,
      );
      assert.deepEqual([...delivered].sort(), [...written].sort());
      assert.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, 20);
    } finally {
      await receiver.close();
    }
  });
});
