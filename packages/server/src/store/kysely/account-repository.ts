import type { Kysely, Selectable } from 'kysely';
import { isPlan } from '../../domain/plan.ts';
import type { AccountRecord } from '../../domain/records/account-records.ts';
import type { AccountsTable, Database } from '../database-schema.ts';
import type { AccountRepository } from '../store.ts';

export class KyselyAccountRepository implements AccountRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(account: AccountRecord): Promise<void> {
    await this.db
      .insertInto('accounts')
      .values({
        id: account.id,
        name: account.name,
        plan: account.plan,
        custom_rate_limit: account.customRateLimit,
        created_at: account.createdAt,
        updated_at: account.updatedAt,
      })
      .execute();
  }

  async get(id: string): Promise<AccountRecord | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toAccount(row);
  }

  async list(): Promise<AccountRecord[]> {
    const rows = await this.db.selectFrom('accounts').selectAll().orderBy('id', 'desc').execute();
    return rows.map(toAccount);
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('accounts')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async updatePlan(
    id: string,
    change: { plan: AccountRecord['plan']; customRateLimit: number | null; updatedAt: number },
  ): Promise<AccountRecord | undefined> {
    const row = await this.db
      .updateTable('accounts')
      .set({ plan: change.plan, custom_rate_limit: change.customRateLimit, updated_at: change.updatedAt })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst();
    return row && toAccount(row);
  }
}

export function toAccount(row: Selectable<AccountsTable>): AccountRecord {
  if (!isPlan(row.plan)) throw new Error(`account ${row.id} has an unknown plan in storage`);
  return {
    id: row.id,
    name: row.name,
    plan: row.plan,
    customRateLimit: row.custom_rate_limit,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
