import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Insertable, Kysely } from 'kysely';
import type { Database, PaymentCountsTable } from '../../../src/store/database-schema.ts';
import { compiledOnce } from '../../../src/store/kysely/compiled-query.ts';
import { insertPaymentCount } from '../../../src/store/kysely/payment-repository.ts';
import { createKysely, migrate } from '../../../src/store/open-store.ts';
import { DATABASE_URL, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';

// insertPaymentCount is the payment repository's own statement (module-level: one per process, whatever
// the store); this lookup is compiled the same way.
const countOf = compiledOnce((db: Kysely<Database>) =>
  db
    .selectFrom('payment_counts')
    .select('n')
    .where('account_id', '=', '')
    .where('direction', '=', '')
    .compile(),
);

interface Opened {
  readonly name: string;
  readonly db: Kysely<Database>;
  readonly storage: TempStorage;
}

describe('statements compiled once (compiledInsertOnce, compiledOnce)', () => {
  const stores: Opened[] = [];

  before(async () => {
    // SQLite and, when it is there, PostgreSQL in one process: each gets SQL in its own dialect.
    const locations: [string, TempStorage][] = [['SQLite', tempSqlite()]];
    if (DATABASE_URL !== undefined) locations.push(['PostgreSQL', await tempPostgres()]);
    for (const [name, storage] of locations) {
      const db = await createKysely(storage.location);
      await migrate(db, storage.location);
      stores.push({ name, db, storage });
    }
  });

  after(async () => {
    for (const { db, storage } of stores) {
      await db.destroy();
      await storage.dispose();
    }
  });

  it('binds the row in column order, then the constants of the ON CONFLICT clause, on every dialect', async () => {
    for (const { name, db } of stores) {
      // Keys in another order than the columns: the column list decides the binding.
      await insertPaymentCount(db, { n: 1, direction: 'sent', wallet_address: 'w1', account_id: 'acct_a' });
      await insertPaymentCount(db, { direction: 'sent', account_id: 'acct_a', n: 1, wallet_address: 'w1' });
      await insertPaymentCount(db, {
        account_id: 'acct_a',
        wallet_address: 'w1',
        direction: 'received',
        n: 1,
      });
      const [sent] = await countOf(db, 'acct_a', 'sent');
      const [received] = await countOf(db, 'acct_a', 'received');
      assert.equal(Number(sent?.n), 2, `${name}: the conflict added its constant 1`);
      assert.equal(Number(received?.n), 1, name);
    }
  });

  it('runs inside transactions, which share the compiled statement, and rolls back with them', async () => {
    for (const { name, db } of stores) {
      await db.transaction().execute(async (trx) => {
        await insertPaymentCount(trx, { account_id: 'acct_t', wallet_address: 'w', direction: 'sent', n: 1 });
      });
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await insertPaymentCount(trx, {
            account_id: 'acct_t',
            wallet_address: 'w',
            direction: 'sent',
            n: 1,
          });
          throw new Error('abort');
        }),
        /abort/,
      );
      const [row] = await countOf(db, 'acct_t', 'sent');
      assert.equal(Number(row?.n), 1, `${name}: the rolled-back upsert left nothing`);
    }
  });

  it('binds a missing value as null, so a NOT NULL column refuses it instead of shifting the others', async () => {
    for (const { name, db } of stores) {
      const partial = { account_id: 'acct_n', direction: 'sent', n: 1 } as Insertable<PaymentCountsTable>;
      await assert.rejects(insertPaymentCount(db, partial), /null|NOT NULL/i, name);
      assert.deepEqual(await countOf(db, 'acct_n', 'sent'), [], name);
    }
  });
});
