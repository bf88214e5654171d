import type { Kysely, Selectable } from 'kysely';
import type { WebhookRecord } from '../../domain/records/event-records.ts';
import type { Database, WebhooksTable } from '../database-schema.ts';
import type { WebhookRepository } from '../store.ts';

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
        enabled_at: webhook.enabledAt,
        disabled_at: webhook.disabledAt,
        disabled_reason: webhook.disabledReason,
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

  async disable(id: string, at: number, reason: string, pendingError: string): Promise<boolean> {
    const run = async (db: Kysely<Database>) => {
      const disabled = await db
        .updateTable('webhooks')
        .set({ disabled_at: at, disabled_reason: reason })
        .where('id', '=', id)
        .where('disabled_at', 'is', null)
        .executeTakeFirst();
      if (Number(disabled.numUpdatedRows) === 0) return false;
      // The lease columns are left alone: an attempt in flight still holds its delivery and records its
      // own outcome over this one (what the endpoint answered it is the truer story).
      await db
        .updateTable('webhook_deliveries')
        .set({ status: 'failed', next_attempt_at: null, last_error: pendingError })
        .where('webhook_id', '=', id)
        .where('status', '=', 'pending')
        .execute();
      return true;
    };
    return this.db.isTransaction ? run(this.db) : this.db.transaction().execute(run);
  }

  async enable(id: string, at: number): Promise<boolean> {
    const enabled = await this.db
      .updateTable('webhooks')
      .set({ disabled_at: null, disabled_reason: null, enabled_at: at })
      .where('id', '=', id)
      .where('disabled_at', 'is not', null)
      .executeTakeFirst();
    return Number(enabled.numUpdatedRows) > 0;
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
    enabledAt: Number(row.enabled_at ?? row.created_at),
    disabledAt: row.disabled_at === null ? null : Number(row.disabled_at),
    disabledReason: row.disabled_reason,
  };
}
