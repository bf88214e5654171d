import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { newId } from '../../src/domain/ids.ts';
import { type PaymentStatus, statusesBefore } from '../../src/domain/payment-status.ts';
import type { PaymentRecord } from '../../src/domain/records/payment-records.ts';
import type { Database } from '../../src/store/database-schema.ts';
import { joinPieces } from '../../src/store/kysely/exact-sum.ts';
import { paymentVolumeRollup } from '../../src/store/migrations/0028-payment-volume-rollup.ts';
import { createKysely, openStore } from '../../src/store/open-store.ts';
import type { Store } from '../../src/store/store.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../support/databases.ts';
import { aTestAccount } from '../support/test-account.ts';
import { aTestPayment } from '../support/test-payment.ts';

const DAY = 86_400_000;
const START = 20_400 * DAY;
const PAID = new Set(['confirmed', 'finalized']);
const ASSETS = [null, { address: 'USDC-MINT', decimals: 6 }, { address: '0xToken', decimals: 18 }];
const RESOURCES = [null, 'https://api.example/a', 'https://api.example/b'];

/** The native currency has no asset field at all. */
function withAsset(asset: { address: string; decimals: number } | null): Partial<PaymentRecord> {
  return asset === null ? {} : { asset };
}

/** A small deterministic generator, so a failing sequence can be run again (its seed is in the name). */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
  return { next, pick: <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T };
}

/**
 * The rollup, recounted from scratch: every paid payment of the payments table, keyed as migration 0028
 * keys it, in JavaScript (not the SQL the rollup or its backfill runs).
 */
async function recount(db: Kysely<Database>): Promise<Map<string, string>> {
  const rows = (
    await sql<Record<string, string | number | null>>`
    select id, account_id, direction, status, network, asset, asset_decimals, resource, created_at,
      refund_of, amount from payments`.execute(db)
  ).rows;
  const byId = new Map(rows.map((row) => [row.id, row]));
  const totals = new Map<string, { n: number; amount: bigint }>();
  const add = (key: string, amount: bigint) => {
    const total = totals.get(key) ?? { n: 0, amount: 0n };
    totals.set(key, { n: total.n + 1, amount: total.amount + amount });
  };
  for (const row of rows) {
    if (!PAID.has(String(row.status))) continue;
    const asset = `${row.network}|${row.asset ?? ''}|${row.asset_decimals ?? -1}`;
    const day = Math.floor(Number(row.created_at) / DAY);
    const amount = BigInt(String(row.amount));
    if (row.direction === 'received')
      add(`${row.account_id}|${day}|received|${asset}|${row.resource ?? ''}`, amount);
    else if (row.refund_of === null) add(`${row.account_id}|${day}|sent|${asset}|`, amount);
    else {
      add(`${row.account_id}|${day}|refunded|${asset}|`, amount);
      const sale = byId.get(row.refund_of);
      if (sale !== undefined && sale.account_id === row.account_id && sale.resource !== null) {
        const saleDay = Math.floor(Number(sale.created_at) / DAY);
        add(`${row.account_id}|${saleDay}|refunded_sale|${asset}|${sale.resource}`, amount);
      }
    }
  }
  return new Map([...totals].map(([key, { n, amount }]) => [key, `${n} ${amount}`]));
}

/** The rollup as stored, rows that count nothing (every payment of theirs reverted) left out. */
async function stored(db: Kysely<Database>): Promise<Map<string, string>> {
  const rows = (await sql<Record<string, string | number>>`select * from payment_volume`.execute(db)).rows;
  return new Map(
    rows
      .filter((row) => Number(row.n) !== 0)
      .map((row) => [
        `${row.account_id}|${Number(row.day)}|${row.flow}|${row.network}|${row.asset}|${Number(row.asset_decimals)}|${row.resource}`,
        `${Number(row.n)} ${joinPieces(row)}`,
      ]),
  );
}

const sorted = (map: Map<string, string>) => [...map].sort(([a], [b]) => (a < b ? -1 : 1));

function describeRollup(name: string, storage: () => Promise<TempStorage>, skip: string | false) {
  describe(`payment_volume rollup: ${name}`, { skip }, () => {
    let temp: TempStorage;
    let store: Store;
    let db: Kysely<Database>;
    let close: () => Promise<void>;

    before(async () => {
      temp = await storage();
      const opened = await openStore(temp.location);
      store = opened.store;
      db = await createKysely(temp.location);
      close = async () => {
        await db.destroy();
        await store.close();
      };
    });
    after(async () => {
      await close();
      await temp.dispose();
    });

    for (const seed of [1, 2, 3]) {
      it(`equals a full recount after a random sequence of receives, sends, refunds, confirms, reverts and failures (seed ${seed})`, async () => {
        const rnd = random(seed);
        const accounts = [aTestAccount(newId('acct')), aTestAccount(newId('acct'))];
        for (const account of accounts) await store.accounts.insert(account);
        const payments: PaymentRecord[] = [];
        const amount = () =>
          rnd.pick([
            1n,
            999_999_999n,
            1_000_000_000n,
            123_456_789_012_345_678n,
            2n ** 256n - 1n,
            BigInt(Math.floor(rnd.next() * 1e6)),
          ]);
        for (let step = 0; step < 300; step++) {
          const op = rnd.next();
          if (op < 0.4 || payments.length === 0) {
            const received = payments.filter((p) => p.direction === 'received');
            const refund = rnd.next() < 0.3 && received.length > 0 ? rnd.pick(received) : undefined;
            // The account is drawn apart from the sale's: some refunds are of another account's sale,
            // which gives back nothing of this account's resources.
            const payment = aTestPayment(START + Math.floor(rnd.next() * 4 * DAY), rnd.pick(accounts).id, {
              direction: refund !== undefined ? 'sent' : rnd.pick(['sent', 'received'] as const),
              status: rnd.pick(['pending', 'submitted', 'confirmed', 'finalized', 'failed'] as const),
              amount: amount(),
              resource: rnd.pick(RESOURCES),
              ...(refund === undefined
                ? withAsset(rnd.pick(ASSETS))
                : { refundOf: refund.id, network: refund.network, ...withAsset(refund.asset ?? null) }),
            });
            await store.payments.insert(payment);
            payments.push(payment);
            continue;
          }
          const payment = rnd.pick(payments);
          const to = rnd.pick([
            'submitted',
            'confirmed',
            'finalized',
            'failed',
            'expired',
            'reverted',
          ] as PaymentStatus[]);
          // An x402 upto payment is recorded at its maximum and confirmed at what settled.
          const changes = to === 'confirmed' && rnd.next() < 0.3 ? { amount: amount() } : {};
          const rollBack = rnd.next() < 0.15;
          try {
            await store.transaction(async (tx) => {
              await tx.payments.transition(payment.id, statusesBefore(to), to, changes, START);
              if (rollBack) throw new Error('rolled back');
            });
          } catch (error) {
            if (!rollBack) throw error;
          }
        }
        assert.deepEqual(sorted(await stored(db)), sorted(await recount(db)));
      });
    }

    it('is backfilled by its migration exactly as kept live', async () => {
      const live = await stored(db);
      assert.ok(live.size > 10, 'the sequences above left rows to compare');
      await sql`drop table payment_volume`.execute(db);
      await paymentVolumeRollup.up(db as unknown as Kysely<unknown>);
      assert.deepEqual(sorted(await stored(db)), sorted(live));
      assert.deepEqual(sorted(await stored(db)), sorted(await recount(db)));
    });

    it('serves the summary reads: by day, top resources, refunds by the sale they refund', async () => {
      const owner = aTestAccount(newId('acct'));
      await store.accounts.insert(owner);
      const at = START + 10 * DAY;
      const sale = aTestPayment(at + 5, owner.id, {
        direction: 'received',
        resource: 'https://api.example/a',
        amount: 100n,
      });
      const pending = aTestPayment(at + 6, owner.id, {
        direction: 'received',
        status: 'pending',
        amount: 7n,
      });
      await store.payments.insert(sale);
      await store.payments.insert(pending);
      // Refunded the next day: on that day by its own date, on the sale's day by the sale's resource.
      const refund = aTestPayment(at + DAY + 1, owner.id, {
        refundOf: sale.id,
        amount: 40n,
        status: 'submitted',
      });
      await store.payments.insert(refund);
      await store.payments.transition(refund.id, ['submitted'], 'confirmed', {}, at + DAY + 2);
      const volume = await store.paymentVolume.byDay(owner.id, at, at + 2 * DAY);
      assert.deepEqual(
        volume.map((v) => [v.day, v.direction, v.refund, v.count, v.amount]),
        [
          [at, 'received', false, 1, 100n],
          [at + DAY, 'sent', true, 1, 40n],
        ],
      );
      const top = await store.paymentVolume.topResources(owner.id, at, at + 1, 10);
      assert.deepEqual(
        top.map((r) => [r.resource, r.count, r.amount]),
        [['https://api.example/a', 1, 100n]],
      );
      const back = await store.paymentVolume.refundsByResource(owner.id, at, at + 1);
      assert.deepEqual(
        back.map((r) => [r.resource, r.count, r.amount]),
        [['https://api.example/a', 1, 40n]],
      );
      // The refund reorged out: it gives nothing back any more.
      await store.payments.transition(refund.id, ['confirmed'], 'reverted', {}, at + DAY + 3);
      assert.deepEqual(await store.paymentVolume.refundsByResource(owner.id, at, at + 1), []);
      // Confirmed → finalized: still counted once.
      await store.payments.transition(sale.id, statusesBefore('finalized'), 'finalized', {}, at + 9);
      assert.equal((await store.paymentVolume.byDay(owner.id, at, at + DAY))[0]?.count, 1);
      assert.deepEqual(sorted(await stored(db)), sorted(await recount(db)));
    });
  });
}

describeRollup('SQLite file', async () => tempSqlite(), false);
describeRollup('PostgreSQL', tempPostgres, SKIP_POSTGRES);
