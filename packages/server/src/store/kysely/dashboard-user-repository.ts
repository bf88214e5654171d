import type { Kysely, Selectable } from 'kysely';
import type { DashboardUserRecord } from '../../domain/records/dashboard-records.ts';
import type { DashboardUsersTable, Database } from '../database-schema.ts';
import type { DashboardUserRepository } from '../store.ts';

export class KyselyDashboardUserRepository implements DashboardUserRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(user: DashboardUserRecord): Promise<boolean> {
    const result = await this.db
      .insertInto('dashboard_users')
      .values({
        id: user.id,
        account_id: user.accountId,
        email: user.email,
        password_hash: user.passwordHash,
        created_at: user.createdAt,
        updated_at: user.updatedAt,
      })
      // Either unique column (email, account_id): the first user wins, whoever races it.
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  async get(id: string): Promise<DashboardUserRecord | undefined> {
    const row = await this.db
      .selectFrom('dashboard_users')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row && toDashboardUser(row);
  }

  async findByEmail(email: string): Promise<DashboardUserRecord | undefined> {
    const row = await this.db
      .selectFrom('dashboard_users')
      .selectAll()
      .where('email', '=', email)
      .executeTakeFirst();
    return row && toDashboardUser(row);
  }

  async findByAccount(accountId: string): Promise<DashboardUserRecord | undefined> {
    const row = await this.db
      .selectFrom('dashboard_users')
      .selectAll()
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row && toDashboardUser(row);
  }

  async setPassword(id: string, passwordHash: string, updatedAt: number): Promise<void> {
    await this.db
      .updateTable('dashboard_users')
      .set({ password_hash: passwordHash, updated_at: updatedAt })
      .where('id', '=', id)
      .execute();
  }
}

export function toDashboardUser(row: Selectable<DashboardUsersTable>): DashboardUserRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    email: row.email,
    passwordHash: row.password_hash,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
