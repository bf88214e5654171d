import type { Kysely } from 'kysely';
import type { Database } from '../database-schema.ts';
import type { JobLeaseRepository } from '../store.ts';

export class KyselyJobLeaseRepository implements JobLeaseRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * One statement, so the primary key decides a race on SQLite and PostgreSQL alike: the insert of a
   * job never taken, or the update of a lease that ran out; a running lease matches neither and
   * returns no row.
   */
  async claim(name: string, owner: string, now: number, until: number): Promise<boolean> {
    const row = await this.db
      .insertInto('job_leases')
      .values({ name, owner, until })
      .onConflict((oc) =>
        oc.column('name').doUpdateSet({ owner, until }).where('job_leases.until', '<=', now),
      )
      .returning('name')
      .executeTakeFirst();
    return row !== undefined;
  }
}
