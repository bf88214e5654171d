import { openStore } from '../../src/store/open-store.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../support/databases.ts';
import { describeEventStoreContract } from './event-store-contract.ts';

describeEventStoreContract('SQLite file', async () => openTemp(tempSqlite()));

describeEventStoreContract('PostgreSQL', async () => openTemp(await tempPostgres()), { skip: SKIP_POSTGRES });

async function openTemp(storage: TempStorage) {
  const { store } = await openStore(storage.location);
  return { store, dispose: () => storage.dispose() };
}
