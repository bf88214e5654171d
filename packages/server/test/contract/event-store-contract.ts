import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newId } from '../../src/domain/ids.ts';
import type {
  EventRecord,
  WebhookDeliveryRecord,
  WebhookRecord,
} from '../../src/domain/records/event-records.ts';
import type { Store } from '../../src/store/store.ts';
import { aTestAccount } from '../support/test-account.ts';

/**
 * What the outbox readers (stream, webhooks) rely on from every Store: commit-ordered seqs, webhook
 * endpoints, deliveries leased to one owner at a time, and the fan-out cursor. Runs on SQLite and
 * PostgreSQL (event-store.test.ts).
 */
export function describeEventStoreContract(
  name: string,
  open: () => Promise<{ store: Store; dispose(): Promise<void> }>,
  options: { skip?: string | false } = {},
): void {
  describe(`Event store contract: ${name}`, { skip: options.skip ?? false }, () => {
    let store: Store;
    let dispose: () => Promise<void>;
    let accountId: string;

    before(async () => {
      ({ store, dispose } = await open());
      accountId = await anAccount(store);
    });
    after(async () => {
      await store?.close();
      await dispose?.();
    });

    it('lists every account’s events in seq order, finds an event’s seq for its own account only', async () => {
      const other = await anAccount(store);
      const start = await store.events.lastSeq();
      const mine = await store.events.append(anEvent(accountId));
      const theirs = await store.events.append(anEvent(other));
      assert.ok(theirs > mine && mine > start);
      assert.equal(await store.events.lastSeq(), theirs);
      const all = await store.events.listAllAfter(start, 10);
      assert.deepEqual(
        all.map((e) => [e.seq, e.accountId]),
        [
          [mine, accountId],
          [theirs, other],
        ],
      );
      const headers = all.map(({ data: _data, ...header }) => header);
      assert.deepEqual(await store.events.listHeadersAfter(start, 10), headers, 'the same without data');
      assert.deepEqual(await store.events.listHeadersAfter(mine, 1), headers.slice(1));
      const id = all[0]?.id as string;
      assert.equal(await store.events.seqOf(accountId, id), mine);
      assert.equal(await store.events.seqOf(other, id), undefined, 'another account’s event is unknown');
      assert.equal(await store.events.seqOf(accountId, 'evt_missing'), undefined);
    });

    it('makes seqs visible in commit order: a reader tailing "after seq N" misses none and repeats none', async () => {
      const start = await store.events.lastSeq();
      const appended: string[] = [];
      let writing = true;
      const seen: { seq: number; id: string }[] = [];
      // The reader tails as fast as it can while transactions append and then take a while to commit.
      const reader = (async () => {
        let cursor = start;
        for (;;) {
          const done = !writing;
          for (const event of await store.events.listAllAfter(cursor, 100)) {
            seen.push({ seq: event.seq, id: event.id });
            cursor = event.seq;
          }
          if (done) return;
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      await Promise.all(
        Array.from({ length: 24 }, async (_, i) => {
          await new Promise((resolve) => setTimeout(resolve, (i * 7) % 11));
          await store.transaction(async (tx) => {
            const event = anEvent(accountId);
            await tx.events.append(event);
            // Commit late, and in a different order than the seqs were taken.
            await new Promise((resolve) => setTimeout(resolve, (24 - i) % 5 === 0 ? 30 : (i * 13) % 9));
            appended.push(event.id);
          });
        }),
      );
      writing = false;
      await reader;
      assert.deepEqual(seen.map((e) => e.id).sort(), [...appended].sort(), 'every event seen exactly once');
      for (let i = 1; i < seen.length; i++) assert.ok((seen[i]?.seq ?? 0) > (seen[i - 1]?.seq ?? 0));
    });

    it('hands each commit’s events to listeners once committed, in seq order; never a rolled-back one', async () => {
      const handed: EventRecord[][] = [];
      const stop = store.onEventsCommitted((events) => handed.push([...events]));
      try {
        const alone = anEvent(accountId);
        const aloneSeq = await store.events.append(alone);
        assert.deepEqual(handed, [[{ ...alone, seq: aloneSeq }]], 'an append outside a transaction at once');
        handed.length = 0;

        const [first, second] = [anEvent(accountId), anEvent(accountId)];
        const seqs = await store.transaction(async (tx) => {
          const seqs = [await tx.events.append(first), await tx.events.append(second)];
          assert.deepEqual(handed, [], 'nothing before the commit');
          return seqs;
        });
        assert.deepEqual(handed, [
          [
            { ...first, seq: seqs[0] },
            { ...second, seq: seqs[1] },
          ],
        ]);
        const read = await store.events.listAllAfter(aloneSeq, 10);
        assert.deepEqual(read, handed[0], 'exactly what a read of the outbox gives');
        handed.length = 0;

        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.events.append(anEvent(accountId));
            throw new Error('rolled back');
          }),
        );
        // Concurrent transactions (SQLite: one group commit) each hand over their own.
        const units = Array.from({ length: 5 }, () => anEvent(accountId));
        await Promise.all(units.map((event) => store.transaction((tx) => tx.events.append(event))));
        assert.deepEqual(
          handed.map((events) => events.map((e) => e.id)).sort(),
          units.map((e) => [e.id]).sort(),
        );
      } finally {
        stop();
      }
    });

    it('stores webhook endpoints per account and deletes them with their deliveries', async () => {
      const other = await anAccount(store);
      const hook = aWebhook(accountId, ['payment.confirmed']);
      const theirs = aWebhook(other, []);
      await store.webhooks.insert(hook);
      await store.webhooks.insert(theirs);
      assert.deepEqual(await store.webhooks.get(hook.id), hook);
      assert.deepEqual(await store.webhooks.listByAccount(other), [theirs]);
      const both = await store.webhooks.listForAccounts([accountId, other]);
      assert.ok(both.some((w) => w.id === hook.id) && both.some((w) => w.id === theirs.id));
      assert.deepEqual(await store.webhooks.listForAccounts([]), []);
      await store.webhookDeliveries.insertMany([aDelivery(theirs, 1)]);
      assert.equal(await store.webhooks.delete(accountId, theirs.id), false, 'not the owner');
      assert.equal(await store.webhooks.delete(other, theirs.id), true);
      assert.equal(await store.webhooks.get(theirs.id), undefined);
      assert.deepEqual(await store.webhookDeliveries.listByWebhook(theirs.id, 10), []);
      assert.equal(await store.webhooks.delete(other, theirs.id), false);
    });

    it('creates a delivery once per endpoint and event, leases it to one owner, records attempts under the lease', async () => {
      const hook = aWebhook(accountId, []);
      await store.webhooks.insert(hook);
      const deliveries = Array.from({ length: 6 }, (_, i) => aDelivery(hook, 1_000 + i));
      await store.webhookDeliveries.insertMany(deliveries);
      await store.webhookDeliveries.insertMany([
        { ...deliveries[0], id: newId('dlv') } as WebhookDeliveryRecord,
      ]);
      const log = await store.webhookDeliveries.listByWebhook(hook.id, 10);
      assert.deepEqual(
        log.map((d) => d.id),
        deliveries.map((d) => d.id).reverse(),
        'newest event first, the repeat ignored',
      );
      assert.deepEqual(await store.webhookDeliveries.get(deliveries[0]?.id as string), deliveries[0]);

      const now = 50_000;
      const [a, b] = await Promise.all([
        store.webhookDeliveries.leaseDue('owner-a', now, now + 60_000, 4),
        store.webhookDeliveries.leaseDue('owner-b', now, now + 60_000, 4),
      ]);
      const leasedIds = [...a, ...b].map((d) => d.id).filter((id) => deliveries.some((d) => d.id === id));
      assert.equal(new Set(leasedIds).size, leasedIds.length, 'no delivery leased twice');
      const taken = a.find((d) => d.webhookId === hook.id) ?? b.find((d) => d.webhookId === hook.id);
      assert.ok(taken !== undefined);
      const holder = a.includes(taken) ? 'owner-a' : 'owner-b';
      const outcome = {
        status: 'pending' as const,
        attempts: 1,
        nextAttemptAt: now + 5_000,
        lastStatusCode: 500,
        lastError: 'answered HTTP 500',
        lastAttemptAt: now,
        deliveredAt: null,
      };
      assert.equal(await store.webhookDeliveries.recordAttempt(taken.id, 'someone-else', outcome), false);
      assert.equal(await store.webhookDeliveries.recordAttempt(taken.id, holder, outcome), true);
      assert.deepEqual(await store.webhookDeliveries.get(taken.id), { ...taken, ...outcome });
      // Not due until its next attempt; due again at once when redelivered.
      const later = await store.webhookDeliveries.leaseDue('owner-c', now + 1, now + 60_000, 100);
      assert.ok(!later.some((d) => d.id === taken.id));
      const redelivered = await store.webhookDeliveries.redeliver(taken.id, now + 2);
      assert.equal(redelivered?.nextAttemptAt, now + 2);
      assert.equal(redelivered?.status, 'pending');
      assert.ok((await store.webhookDeliveries.nextDueAt()) !== undefined);
      assert.equal(await store.webhookDeliveries.redeliver('dlv_missing', now), undefined);

      // Redelivered while an attempt is in flight: no other worker takes it (it was sent twice at once),
      // and the attempt's outcome is recorded (it was thrown away with the lease).
      const [inFlight] = await store.webhookDeliveries.leaseDue('owner-d', now + 3, now + 60_000, 100);
      assert.equal(inFlight?.id, taken.id);
      await store.webhookDeliveries.redeliver(taken.id, now + 4);
      const meanwhile = await store.webhookDeliveries.leaseDue('owner-e', now + 5, now + 60_000, 100);
      assert.ok(!meanwhile.some((d) => d.id === taken.id), 'leased twice while in flight');
      const delivered = { ...outcome, status: 'succeeded' as const, attempts: 2, deliveredAt: now + 6 };
      assert.equal(await store.webhookDeliveries.recordAttempt(taken.id, 'owner-d', delivered), true);
      assert.equal((await store.webhookDeliveries.get(taken.id))?.status, 'succeeded');
    });

    it('disables an endpoint once, failing its pending deliveries but not the lease of one in flight; enables it again', async () => {
      const hook = aWebhook(accountId, []);
      const other = aWebhook(accountId, []);
      await store.webhooks.insert(hook);
      await store.webhooks.insert(other);
      const [inFlight, waiting, done] = [
        aDelivery(hook, 2_000),
        aDelivery(hook, 2_001),
        aDelivery(hook, 2_002),
      ];
      const elsewhere = aDelivery(other, 2_003);
      assert.ok(inFlight && waiting && done);
      await store.webhookDeliveries.insertMany([inFlight, waiting, done, elsewhere]);
      const succeeded = {
        status: 'succeeded' as const,
        attempts: 1,
        nextAttemptAt: null,
        lastStatusCode: 200,
        lastError: null,
        lastAttemptAt: 20_000,
        deliveredAt: 20_000,
      };
      const now = 20_000;
      const leased = await store.webhookDeliveries.leaseDue('owner-x', now, now + 15_000, 100);
      assert.ok(leased.some((d) => d.id === done.id) && leased.some((d) => d.id === inFlight.id));
      assert.equal(await store.webhookDeliveries.recordAttempt(done.id, 'owner-x', succeeded), true);
      // Every other one handed back unsent but `inFlight`: free to lease again, as it was.
      for (const d of leased.filter((l) => l.id !== done.id && l.id !== inFlight.id)) {
        assert.equal(await store.webhookDeliveries.release(d.id, 'owner-x'), true);
      }
      assert.equal(await store.webhookDeliveries.release(inFlight.id, 'someone-else'), false);
      assert.deepEqual(await store.webhookDeliveries.get(waiting.id), waiting, 'released as it was');

      const why = 'answered HTTP 410 Gone to delivery dlv_x';
      assert.equal(await store.webhooks.disable(hook.id, 30_000, why, 'not sent: disabled'), true);
      assert.equal(
        await store.webhooks.disable(hook.id, 31_000, 'disabled by its account', 'other'),
        false,
        'disabled already: the first reason and time stay',
      );
      assert.deepEqual(await store.webhooks.get(hook.id), {
        ...hook,
        disabledAt: 30_000,
        disabledReason: why,
      });
      const failedUnsent = {
        ...waiting,
        status: 'failed',
        nextAttemptAt: null,
        lastError: 'not sent: disabled',
      };
      assert.deepEqual(await store.webhookDeliveries.get(waiting.id), failedUnsent);
      assert.equal((await store.webhookDeliveries.get(done.id))?.status, 'succeeded', 'finished ones left');
      assert.equal(
        (await store.webhookDeliveries.get(elsewhere.id))?.status,
        'pending',
        'other endpoints left',
      );
      // The attempt in flight still holds its lease and records what the endpoint answered it.
      assert.equal((await store.webhookDeliveries.get(inFlight.id))?.status, 'failed');
      assert.equal(await store.webhookDeliveries.recordAttempt(inFlight.id, 'owner-x', succeeded), true);
      assert.equal((await store.webhookDeliveries.get(inFlight.id))?.status, 'succeeded');

      assert.equal(await store.webhooks.enable(hook.id, 40_000), true);
      assert.equal(await store.webhooks.enable(hook.id, 41_000), false, 'enabled already');
      assert.deepEqual(await store.webhooks.get(hook.id), { ...hook, enabledAt: 40_000 });
      assert.deepEqual(await store.webhookDeliveries.get(waiting.id), failedUnsent, 'not made pending again');
      assert.equal(await store.webhooks.disable('whk_missing', 1, why, 'x'), false);
      assert.equal(await store.webhooks.enable('whk_missing', 1), false);
    });

    it('hands the outbox cursor to one transaction at a time', async () => {
      const name = `test-${newId('evt')}`;
      const order: string[] = [];
      await Promise.all(
        ['first', 'second'].map((who) =>
          store.transaction(async (tx) => {
            const seq = await tx.webhookDeliveries.claimCursor(name);
            order.push(`${who} read ${seq}`);
            await new Promise((resolve) => setTimeout(resolve, 20));
            await tx.webhookDeliveries.advanceCursor(name, seq + 10);
          }),
        ),
      );
      assert.deepEqual(
        order.map((o) => o.replace(/^\w+ /, '')),
        ['read 0', 'read 10'],
        'the second claim saw the first one’s advance',
      );
    });
  });
}

async function anAccount(store: Store): Promise<string> {
  const id = newId('acct');
  await store.accounts.insert(aTestAccount(id, { name: 'events', plan: 'premium' }));
  return id;
}

/** An outbox event of the account (shared with event-hub.test.ts). */
export function anEvent(accountId: string) {
  return {
    id: newId('evt'),
    accountId,
    type: 'payment.received',
    paymentId: newId('pay'),
    data: { amount: 1.5, status: 'submitted' },
    createdAt: Date.now(),
  };
}

function aWebhook(accountId: string, eventTypes: string[]): WebhookRecord {
  return {
    id: newId('whk'),
    accountId,
    url: 'https://example.com/hook',
    eventTypes,
    sealedSecret: 'v1:sealed',
    createdAt: 5_000,
    enabledAt: 5_000,
    disabledAt: null,
    disabledReason: null,
  };
}

function aDelivery(webhook: WebhookRecord, eventSeq: number): WebhookDeliveryRecord {
  return {
    id: newId('dlv'),
    webhookId: webhook.id,
    accountId: webhook.accountId,
    eventId: newId('evt'),
    eventSeq,
    status: 'pending',
    attempts: 0,
    nextAttemptAt: 10_000,
    lastStatusCode: null,
    lastError: null,
    lastAttemptAt: null,
    deliveredAt: null,
    createdAt: 10_000,
  };
}
