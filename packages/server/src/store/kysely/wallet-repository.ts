import type { Kysely, Selectable } from 'kysely';
import type { ChainFamily } from '../../domain/address.ts';
import type { WalletRecord } from '../../domain/records/wallet-records.ts';
import type { Database, WalletsTable } from '../database-schema.ts';
import type { WalletRepository } from '../store.ts';
import { compiledOnce } from './compiled-query.ts';

/** Every receive and send looks its wallet up: compiled once (see compiledOnce). */
const findByAddressQuery = compiledOnce((db: Kysely<Database>) =>
  db.selectFrom('wallets').selectAll().where('family', '=', '').where('address', '=', '').compile(),
);

export class KyselyWalletRepository implements WalletRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(wallet: WalletRecord): Promise<boolean> {
    const result = await this.db
      .insertInto('wallets')
      .values({
        id: wallet.id,
        account_id: wallet.accountId,
        family: wallet.family,
        network: wallet.network,
        address: wallet.address,
        watch_only: wallet.watchOnly ? 1 : 0,
        encrypted_secret: wallet.encryptedSecret,
        created_at: wallet.createdAt,
        label: wallet.label,
      })
      .onConflict((oc) => oc.columns(['family', 'address']).doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  async listByAccount(accountId: string): Promise<WalletRecord[]> {
    const rows = await this.db
      .selectFrom('wallets')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('id', 'asc')
      .execute();
    return rows.map(toWallet);
  }

  async setLabel(
    accountId: string,
    family: ChainFamily,
    address: string,
    label: string | null,
  ): Promise<WalletRecord | undefined> {
    // The account is in the WHERE clause: another account's wallet is not updated, and looks missing.
    const row = await this.db
      .updateTable('wallets')
      .set({ label })
      .where('family', '=', family)
      .where('address', '=', address)
      .where('account_id', '=', accountId)
      .returningAll()
      .executeTakeFirst();
    return row && toWallet(row);
  }

  async findByAddress(family: ChainFamily, address: string): Promise<WalletRecord | undefined> {
    const [row] = await findByAddressQuery(this.db, family, address);
    return row && toWallet(row);
  }
}

function toWallet(row: Selectable<WalletsTable>): WalletRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    family: row.family as ChainFamily,
    network: row.network,
    address: row.address,
    watchOnly: Boolean(row.watch_only),
    encryptedSecret: row.encrypted_secret,
    createdAt: Number(row.created_at),
    label: row.label,
  };
}
