import { type Kysely, type Selectable, sql } from 'kysely';
import type {
  DiscoveryQuery,
  DiscoveryRecord,
  DiscoveryRepository,
} from '../../domain/records/discovery-records.ts';
import type { Database, DiscoveryResourcesTable } from '../database-schema.ts';

export class KyselyDiscoveryRepository implements DiscoveryRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async upsert(
    record: DiscoveryRecord,
    bound: { readonly maxPerAccount: number; readonly staleBefore: number },
  ): Promise<boolean> {
    const row = toRow(record);
    const { account_id, resource, tool, created_at: _, ...changed } = row;
    const run = async (db: Kysely<Database>): Promise<boolean> => {
      const updated = await db
        .updateTable('discovery_resources')
        .set(changed)
        .where('account_id', '=', account_id)
        .where('resource', '=', resource)
        .where('tool', '=', tool)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) > 0) return true;
      // The account's row, written to itself: PostgreSQL holds its row lock (on a column no key uses, so
      // payments referencing the account are not blocked) to the commit, SQLite the one writer; a second
      // new declaration for the account waits here and counts the first one's row.
      await db
        .updateTable('accounts')
        .set((eb) => ({ updated_at: eb.ref('updated_at') }))
        .where('id', '=', account_id)
        .execute();
      await db
        .deleteFrom('discovery_resources')
        .where('account_id', '=', account_id)
        .where('updated_at', '<', bound.staleBefore)
        .execute();
      const count = await db
        .selectFrom('discovery_resources')
        .select((eb) => eb.fn.countAll<string | number>().as('n'))
        .where('account_id', '=', account_id)
        .executeTakeFirstOrThrow();
      if (Number(count.n) >= bound.maxPerAccount) return false;
      await db
        .insertInto('discovery_resources')
        .values(row)
        // Another settle declared the same resource meanwhile: the later write wins, as an update would.
        .onConflict((oc) => oc.columns(['account_id', 'resource', 'tool']).doUpdateSet(changed))
        .execute();
      return true;
    };
    return this.db.isTransaction ? run(this.db) : this.db.transaction().execute(run);
  }

  async list(query: DiscoveryQuery): Promise<{ items: DiscoveryRecord[]; total: number }> {
    let filtered = this.db.selectFrom('discovery_resources').where('updated_at', '>=', query.updatedSince);
    if (query.accountId !== undefined) filtered = filtered.where('account_id', '=', query.accountId);
    if (query.type !== undefined) filtered = filtered.where('type', '=', query.type);
    if (query.network !== undefined) filtered = filtered.where('network', '=', query.network);
    if (query.scheme !== undefined) filtered = filtered.where('scheme', '=', query.scheme);
    if (query.payTo !== undefined) filtered = filtered.where('pay_to', '=', query.payTo);
    for (const word of query.words ?? []) {
      // ESCAPE named: SQLite has no escape character by default (PostgreSQL's is the same `\`).
      filtered = filtered.where(sql<boolean>`search_text like ${`%${escapeLike(word)}%`} escape '\\'`);
    }
    const [rows, count] = await Promise.all([
      filtered
        .selectAll()
        .orderBy('updated_at', 'desc')
        .orderBy('resource')
        .orderBy('tool')
        .orderBy('account_id')
        .limit(query.limit)
        .offset(query.offset)
        .execute(),
      filtered.select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { items: rows.map(fromRow), total: Number(count.n) };
  }
}

/** A word as a LIKE pattern matches it literally (`\` is the escape character given with it). */
function escapeLike(word: string): string {
  return word.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function toRow(r: DiscoveryRecord): Selectable<DiscoveryResourcesTable> {
  return {
    account_id: r.accountId,
    resource: r.resource,
    tool: r.tool,
    type: r.type,
    x402_version: r.x402Version,
    description: r.description,
    mime_type: r.mimeType,
    service_name: r.serviceName,
    tags: r.tags === null ? null : JSON.stringify(r.tags),
    icon_url: r.iconUrl,
    network: r.network,
    scheme: r.scheme,
    pay_to: r.payTo,
    accepts: JSON.stringify(r.accepts),
    extensions: JSON.stringify(r.extensions),
    search_text: r.searchText,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
  };
}

function fromRow(row: Selectable<DiscoveryResourcesTable>): DiscoveryRecord {
  return {
    accountId: row.account_id,
    resource: row.resource,
    tool: row.tool,
    type: row.type === 'mcp' ? 'mcp' : 'http',
    x402Version: Number(row.x402_version),
    description: row.description,
    mimeType: row.mime_type,
    serviceName: row.service_name,
    tags: row.tags === null ? null : (JSON.parse(row.tags) as string[]),
    iconUrl: row.icon_url,
    network: row.network,
    scheme: row.scheme,
    payTo: row.pay_to,
    accepts: JSON.parse(row.accepts) as Record<string, unknown>[],
    extensions: JSON.parse(row.extensions) as Record<string, unknown>,
    searchText: row.search_text,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
