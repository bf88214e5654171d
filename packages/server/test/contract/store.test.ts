import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { MIGRATIONS } from '../../src/store/migrations/index.ts';
import { createKysely, migrate, openStore, type StorageLocation } from '../../src/store/open-store.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../support/databases.ts';
import { describePaymentStoreContract, describeStoreContract } from './store-contract.ts';

describeStoreContract('SQLite file', async () => openTemp(tempSqlite()));

describeStoreContract('PostgreSQL', async () => openTemp(await tempPostgres()), { skip: SKIP_POSTGRES });

describePaymentStoreContract('SQLite file', async () => openTemp(tempSqlite()));

describePaymentStoreContract('PostgreSQL', async () => openTemp(await tempPostgres()), {
  skip: SKIP_POSTGRES,
});

async function openTemp(storage: TempStorage) {
  const { store } = await openStore(storage.location);
  return { store, dispose: () => storage.dispose() };
}

const ALL_MIGRATIONS = Object.keys(MIGRATIONS);

/** Two instances starting at once must both come up, with the migrations applied exactly once. */
async function migrateConcurrently(location: StorageLocation) {
  const first = await createKysely(location);
  const dbs = [first, await createKysely(location), await createKysely(location)];
  try {
    const results = await Promise.all(dbs.map((db) => migrate(db, location)));
    const applied = results.flat();
    assert.deepEqual(
      applied.sort(),
      [...ALL_MIGRATIONS].sort(),
      'each migration applied by exactly one instance',
    );
    const rows = await sql<{ n: number | string }>`select count(*) as n from kysely_migration`.execute(first);
    assert.equal(Number(rows.rows[0]?.n), ALL_MIGRATIONS.length);
    assert.deepEqual(await migrate(first, location), [], 'a later start finds nothing to do');
  } finally {
    await Promise.all(dbs.map((db) => db.destroy()));
  }
}

describe('migrations', () => {
  it('run once when three instances start at once on one SQLite file', async () => {
    const storage = tempSqlite();
    try {
      await migrateConcurrently(storage.location);
    } finally {
      await storage.dispose();
    }
  });

  it('run once when three instances start at once on PostgreSQL', { skip: SKIP_POSTGRES }, async () => {
    const storage = await tempPostgres();
    try {
      await migrateConcurrently(storage.location);
    } finally {
      await storage.dispose();
    }
  });

  it('keep stored rows when storage is reopened', async () => {
    const storage = tempSqlite();
    try {
      const first = await openStore(storage.location);
      assert.deepEqual(first.migrated, ALL_MIGRATIONS);
      await first.store.accounts.insert({
        id: 'acct_KEEP',
        name: 'kept',
        plan: 'premium',
        customRateLimit: null,
        createdAt: 1,
        updatedAt: 1,
      });
      await first.store.close();
      const second = await openStore(storage.location);
      assert.deepEqual(second.migrated, []);
      assert.equal((await second.store.accounts.get('acct_KEEP'))?.name, 'kept');
      await second.store.close();
    } finally {
      await storage.dispose();
    }
  });
});
