import type { Expression, Kysely, Selectable, SqlBool } from 'kysely';
import type { Database } from '../database-schema.ts';

/** The tables whose rows background workers lease: payments (reconciler) and webhook deliveries. */
export type LeasedTable = 'payments' | 'webhook_deliveries';

/** What every leased table has; the helper's queries touch nothing else. */
interface LeaseColumns {
  id: string;
  lease_owner: string | null;
  lease_until: number | null;
}

export interface LeaseRequest<Table extends LeasedTable> {
  readonly table: Table;
  /**
   * Which rows may be leased, besides a free or lapsed lease. Checked when candidates are picked and
   * again when each is taken, so a row that changed in between (a delivery that succeeded) is left.
   */
  readonly eligible: Expression<SqlBool>;
  /** Candidates are picked in this column's ascending order. */
  readonly orderBy: keyof Database[Table] & string;
  readonly owner: string;
  readonly now: number;
  readonly until: number;
  readonly limit: number;
}

/**
 * Leases up to `limit` eligible rows whose lease is free or lapsed to `owner` until `until`. Each
 * candidate is taken with a compare-and-set on its `lease_until` as it was read, so two instances
 * leasing at once never both get a row, on SQLite (one writer) and PostgreSQL (no row locks held
 * between the read and the update) alike.
 */
export async function leaseRows<Table extends LeasedTable>(
  db: Kysely<Database>,
  request: LeaseRequest<Table>,
): Promise<Selectable<Database[Table]>[]> {
  // Typed as one table that has only the lease columns: they are all these queries name, and every
  // leased table has them (LeasedTable), so one query shape serves each. Kysely writes the real name.
  const leasing = db as unknown as Kysely<{ leased: LeaseColumns }>;
  const table = request.table as unknown as 'leased';
  const { eligible, owner, now, until, limit } = request;
  const candidates = await leasing
    .selectFrom(table)
    .select(['id', 'lease_until'])
    .where(eligible)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .orderBy(request.orderBy as keyof LeaseColumns, 'asc')
    .limit(limit)
    .execute();
  const leased: Selectable<Database[Table]>[] = [];
  for (const candidate of candidates) {
    const row = await leasing
      .updateTable(table)
      .set({ lease_owner: owner, lease_until: until })
      .where('id', '=', candidate.id)
      .where(eligible)
      .where((eb) =>
        candidate.lease_until === null
          ? eb('lease_until', 'is', null)
          : eb('lease_until', '=', candidate.lease_until),
      )
      .returningAll()
      .executeTakeFirst();
    if (row !== undefined) leased.push(row as unknown as Selectable<Database[Table]>);
  }
  return leased;
}
