import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../../src/store/database-schema.ts';
import { createKysely, migrate } from '../../../src/store/open-store.ts';
import { type TempStorage, tempSqlite } from '../../support/databases.ts';

/**
 * The SQLite handle under Kysely reads rows as arrays, turns them into objects with a function made per
 * statement, and reuses prepared statements by SQL text (open-store.ts). These hold it to what
 * better-sqlite3's own row objects would be, on every path Kysely uses: all, run and iterate (stream).
 */
describe('SQLite statements: cached, rows read as arrays', () => {
  let storage: TempStorage;
  let db: Kysely<Database>;

  before(async () => {
    storage = tempSqlite();
    db = await createKysely(storage.location);
    await migrate(db, storage.location);
    for (let i = 0; i < 5; i++) {
      await db
        .insertInto('payment_counts')
        .values({ account_id: `acct_${i}`, wallet_address: 'w', direction: 'sent', n: i })
        .execute();
    }
  });

  after(async () => {
    await db.destroy();
    await storage.dispose();
  });

  const query = () => db.selectFrom('payment_counts').selectAll().orderBy('account_id');

  it('streams the same rows, with the same keys in the same order, as a plain read', async () => {
    const read = await query().execute();
    const streamed = [];
    for await (const row of query().stream()) streamed.push(row);
    assert.equal(read.length, 5);
    assert.deepEqual(streamed, read);
    assert.deepEqual(Object.keys(read[0] ?? {}), [
      'account_id',
      'wallet_address',
      'direction',
      'n',
      'changes',
    ]);
  });

  it('gives a repeated column name the later value, as SQLite row objects do', async () => {
    const { rows } = await sql<{ v: number }>`select 1 as v, 2 as v`.execute(db);
    assert.deepEqual(rows, [{ v: 2 }]);
  });

  it('reports the rows a write changed, and keeps answering past the cache size', async () => {
    const updated = await db
      .updateTable('payment_counts')
      .set({ n: 9 })
      .where('wallet_address', '=', 'w')
      .execute();
    assert.equal(Number(updated[0]?.numUpdatedRows), 5);
    for (let i = 0; i < 300; i++) {
      const { rows } = await sql<{ v: number }>`select ${sql.lit(i)} as v`.execute(db);
      assert.equal(rows[0]?.v, i);
    }
    assert.equal((await query().execute()).length, 5, 'statements prepared before the evictions still run');
  });

  it("finds payments by their indexes: by Idempotency-Key, open ones to lease, expired ones to watch, a wallet's unsettled ones", async () => {
    const plan = async (query: ReturnType<typeof sql>) =>
      (await sql<{ detail: string }>`explain query plan ${query}`.execute(db)).rows
        .map((r) => r.detail)
        .join('; ');
    assert.match(
      await plan(sql`select * from payments where account_id = ${'a'} and idempotency_key = ${'k'}`),
      /USING INDEX payments_idempotency/,
    );
    assert.match(
      await plan(
        sql`select id, lease_until from payments where status in (${'pending'}, ${'submitted'})
          and (lease_until is null or lease_until < ${1}) order by created_at asc limit ${10}`,
      ),
      /USING INDEX payments_status_updated \(status=\?\)/,
    );
    assert.match(
      await plan(
        sql`select id from payments where status = ${'expired'} and updated_at >= ${1} and mode = ${'local'}
          order by updated_at asc limit ${10}`,
      ),
      /USING INDEX payments_status_updated \(status=\? AND updated_at>\?\)/,
    );
    // A send's unsettled spend (PaymentRepository.unsettledSpend): only open payments are in the index.
    assert.match(
      await plan(
        sql`select amount, fee, asset from payments where wallet_address = ${'w'} and network = ${'n'}
          and direction = ${'sent'} and mode = ${'custodial'} and status in ('pending', 'submitted')`,
      ),
      /USING INDEX payments_unsettled \(wallet_address=\?\)/,
    );
  });
});
