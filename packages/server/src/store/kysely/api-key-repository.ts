import type { Kysely, Selectable } from 'kysely';
import { parseScopes } from '../../domain/api-key-scope.ts';
import type { ApiKeyRecord, KeyWithAccount } from '../../domain/records/account-records.ts';
import type { ApiKeysTable, Database } from '../database-schema.ts';
import type { ApiKeyRepository } from '../store.ts';
import { toAccount } from './account-repository.ts';
import { compiledOnce } from './compiled-query.ts';

/**
 * Authentication runs this on every request, so it is compiled once (see compiledOnce).
 */
const findActiveByHashQuery = compiledOnce((db: Kysely<Database>) =>
  db
    .selectFrom('api_keys as k')
    .innerJoin('accounts as a', 'a.id', 'k.account_id')
    .select([
      'k.id',
      'k.account_id',
      'k.name',
      'k.display_prefix',
      'k.key_hash',
      'k.created_at',
      'k.last_used_at',
      'k.revoked_at',
      'k.scopes',
      'a.name as account_name',
      'a.plan as account_plan',
      'a.custom_rate_limit as account_custom_rate_limit',
      'a.created_at as account_created_at',
      'a.updated_at as account_updated_at',
    ])
    .where('k.key_hash', '=', '')
    .where('k.revoked_at', 'is', null)
    .compile(),
);

export class KyselyApiKeyRepository implements ApiKeyRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(key: ApiKeyRecord): Promise<void> {
    await this.db
      .insertInto('api_keys')
      .values({
        id: key.id,
        account_id: key.accountId,
        name: key.name,
        display_prefix: key.displayPrefix,
        key_hash: key.hash,
        created_at: key.createdAt,
        last_used_at: key.lastUsedAt,
        revoked_at: key.revokedAt,
        scopes: key.scopes.join(' '),
      })
      .execute();
  }

  async findActiveByHash(hash: string): Promise<KeyWithAccount | undefined> {
    const [row] = await findActiveByHashQuery(this.db, hash);
    if (row === undefined) return undefined;
    return {
      key: toApiKey(row),
      account: toAccount({
        id: row.account_id,
        name: row.account_name,
        plan: row.account_plan,
        custom_rate_limit: row.account_custom_rate_limit,
        created_at: row.account_created_at,
        updated_at: row.account_updated_at,
      }),
    };
  }

  async get(id: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toApiKey(row);
  }

  async listByAccount(accountId: string): Promise<ApiKeyRecord[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('id', 'asc')
      .execute();
    return rows.map(toApiKey);
  }

  async revoke(id: string, at: number): Promise<ApiKeyRecord | undefined> {
    await this.db
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .execute();
    return this.get(id);
  }

  async touch(id: string, at: number): Promise<void> {
    await this.db
      .updateTable('api_keys')
      .set({ last_used_at: at })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
      .execute();
  }
}

function toApiKey(row: Selectable<ApiKeysTable>): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    displayPrefix: row.display_prefix,
    hash: row.key_hash,
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    scopes: parseScopes(row.scopes),
  };
}
