import type { Kysely, Selectable } from 'kysely';
import type { Database, WebhooksTable } from '../database-schema.ts';
import type { WebhookRecord, WebhookRepository } from '../store.ts';

export class KyselyWebhookRepository implements WebhookRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(webhook: WebhookRecord): Promise<void> {
    await this.db
      .insertInto('webhooks')
      .values({
        id: webhook.id,
        account_id: webhook.accountId,
        url: webhook.url,
        event_types: JSON.stringify(webhook.eventTypes),
        secret: webhook.sealedSecret,
        created_at: webhook.createdAt,
      })
      .execute();
  }

  async get(id: string): Promise<WebhookRecord | undefined> {
    const row = await this.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toWebhook(row);
  }

  async listByAccount(accountId: string): Promise<WebhookRecord[]> {
    const rows = await this.db
      .selectFrom('webhooks')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('id', 'asc')
      .execute();
    return rows.map(toWebhook);
  }

  async listForAccounts(accountIds: readonly string[]): Promise<WebhookRecord[]> {
    if (accountIds.length === 0) return [];
    const rows = await this.db
      .selectFrom('webhooks')
      .selectAll()
      .where('account_id', 'in', [...accountIds])
      .orderBy('id', 'asc')
      .execute();
    return rows.map(toWebhook);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const run = async (db: Kysely<Database>) => {
      const deleted = await db
        .deleteFrom('webhooks')
        .where('id', '=', id)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      if (Number(deleted.numDeletedRows) === 0) return false;
      await db.deleteFrom('webhook_deliveries').where('webhook_id', '=', id).execute();
      return true;
    };
    return this.db.isTransaction ? run(this.db) : this.db.transaction().execute(run);
  }
}

function toWebhook(row: Selectable<WebhooksTable>): WebhookRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    url: row.url,
    eventTypes: JSON.parse(row.event_types) as string[],
    sealedSecret: row.secret,
    createdAt: Number(row.created_at),
  };
}
