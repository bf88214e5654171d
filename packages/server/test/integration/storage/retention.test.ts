import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../src/config.ts';
import { newId } from '../../../src/domain/ids.ts';
import type { WebhookDeliveryRecord } from '../../../src/domain/records/event-records.ts';
import { createPaymentEvents } from '../../../src/events/payment-events.ts';
import { RetentionJob } from '../../../src/events/retention-job.ts';
import { openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';

const DAY = 86_400_000;
const NOW = 100 * DAY;

function describeRetention(
  name: string,
  storage: () => Promise<TempStorage>,
  options: { skip?: string | false } = {},
) {
  describe(`retention of outbox events and webhook deliveries (${name})`, options, () => {
    let temp: TempStorage;
    let store: Store;
    before(async () => {
      temp = await storage();
      ({ store } = await openStore(temp.location));
    });
    after(async () => {
      await store?.close();
      await temp?.dispose();
    });

    const event = async (day: number) => {
      const id = newId('evt');
      const seq = await store.events.append({
        id,
        accountId: 'acct_retention',
        type: 'payment.confirmed',
        paymentId: null,
        data: { amount: 1 },
        createdAt: day * DAY,
      });
      return { id, seq };
    };
    const delivery = (
      e: { id: string; seq: number },
      status: WebhookDeliveryRecord['status'],
      day: number,
    ): WebhookDeliveryRecord => ({
      id: newId('dlv'),
      webhookId: 'whk_retention',
      accountId: 'acct_retention',
      eventId: e.id,
      eventSeq: e.seq,
      status,
      attempts: 1,
      nextAttemptAt: status === 'pending' ? NOW + 60_000 : null,
      lastStatusCode: status === 'succeeded' ? 204 : 500,
      lastError: null,
      lastAttemptAt: day * DAY,
      deliveredAt: status === 'succeeded' ? day * DAY : null,
      createdAt: day * DAY,
    });
    const job = (instanceId: string, now = NOW) =>
      new RetentionJob({ store, instanceId, retentionDays: 30, batchSize: 1, now: () => now });

    it('deletes old events and finished deliveries, keeping what a delivery, the fan-out or a resume still needs', async () => {
      const unneeded = await event(10);
      const delivered = await event(10);
      const retrying = await event(10);
      const loggedLately = await event(10);
      const recent = await event(80);
      const d = {
        delivered: delivery(delivered, 'succeeded', 10),
        retrying: delivery(retrying, 'pending', 10),
        loggedLately: delivery(loggedLately, 'failed', 80),
      };
      await store.webhookDeliveries.insertMany(Object.values(d));
      await store.transaction(async (tx) => {
        await tx.webhookDeliveries.claimCursor('webhooks');
        await tx.webhookDeliveries.advanceCursor('webhooks', recent.seq);
      });
      const notFannedOut = await event(10);
      await store.idempotency.claim('acct_retention', 'old-key', 'h', 98 * DAY, 98 * DAY + 60_000);
      await store.idempotency.claim('acct_retention', 'new-key', 'h', NOW - 60_000, NOW);

      assert.deepEqual(await job('instance-a').runOnce(), { deliveries: 1, events: 2, idempotencyKeys: 1 });

      const kept = async (e: { id: string }) =>
        (await store.events.seqOf('acct_retention', e.id)) !== undefined;
      assert.equal(await kept(unneeded), false, 'old, fanned out, no delivery names it');
      assert.equal(await kept(delivered), false, 'old, and its finished delivery is gone too');
      assert.equal(await store.webhookDeliveries.get(d.delivered.id), undefined);
      assert.equal(await kept(retrying), true, 'a pending delivery is sent from its event');
      assert.equal((await store.webhookDeliveries.get(d.retrying.id))?.status, 'pending');
      assert.equal(await kept(loggedLately), true, 'named by a delivery still in the log');
      assert.notEqual(await store.webhookDeliveries.get(d.loggedLately.id), undefined);
      assert.equal(await kept(recent), true, 'within the retention window: a stream can resume from it');
      assert.equal(await kept(notFannedOut), true, 'the webhook fan-out has not read it yet');
      const claimAgain = await store.idempotency.claim('acct_retention', 'old-key', 'other', NOW, NOW + 1);
      assert.deepEqual(claimAgain, { state: 'claimed' }, 'an Idempotency-Key older than a day is forgotten');
      const younger = await store.idempotency.claim('acct_retention', 'new-key', 'other', NOW, NOW + 1);
      assert.deepEqual(younger, { state: 'mismatch' }, 'a younger key is kept: another body is refused');
    });

    it('runs on one instance per interval: the others find the lease taken until it runs out', async () => {
      const later = NOW + 10 * DAY;
      const [a, b] = await Promise.all([
        job('instance-b', later).runOnce(),
        job('instance-c', later).runOnce(),
      ]);
      assert.equal([a, b].filter((r) => r !== undefined).length, 1, 'exactly one ran');
      assert.equal(await job('instance-d', later + 3_599_999).runOnce(), undefined, 'within the hour');
      assert.notEqual(await job('instance-d', later + 3_600_000).runOnce(), undefined, 'the next hour');
    });

    it('keeps EVENT_RETENTION_DAYS of events on a running instance', async () => {
      const now = Date.now();
      const append = async (ageMs: number) => {
        const id = newId('evt');
        const seq = await store.events.append({
          id,
          accountId: 'acct_retention',
          type: 'payment.confirmed',
          paymentId: null,
          data: { amount: 1 },
          createdAt: now - ageMs,
        });
        return { id, seq };
      };
      const threeDays = await append(3 * DAY);
      const oneDay = await append(DAY);
      await store.transaction(async (tx) => {
        await tx.webhookDeliveries.claimCursor('webhooks');
        await tx.webhookDeliveries.advanceCursor('webhooks', oneDay.seq);
      });
      const events = await createPaymentEvents({
        store,
        masterKey: new Uint8Array(32),
        instanceId: 'instance-events',
        config: loadConfig({ EVENT_RETENTION_DAYS: '2' }),
      });
      assert.notEqual(await events.retention.runOnce(), undefined, 'it ran');
      assert.equal(await store.events.seqOf('acct_retention', threeDays.id), undefined);
      assert.equal(await store.events.seqOf('acct_retention', oneDay.id), oneDay.seq);
    });
  });
}

describeRetention('SQLite file', async () => tempSqlite());
describeRetention('PostgreSQL', () => tempPostgres(), { skip: SKIP_POSTGRES });
