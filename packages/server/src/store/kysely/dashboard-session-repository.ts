import type { Kysely } from 'kysely';
import type { DashboardSessionRecord, DashboardUserRecord } from '../../domain/records/dashboard-records.ts';
import type { Database } from '../database-schema.ts';
import type { DashboardSessionRepository } from '../store.ts';
import { toDashboardUser } from './dashboard-user-repository.ts';

export class KyselyDashboardSessionRepository implements DashboardSessionRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(session: DashboardSessionRecord): Promise<void> {
    await this.db
      .insertInto('dashboard_sessions')
      .values({
        id_hash: session.idHash,
        user_id: session.userId,
        csrf_token: session.csrfToken,
        created_at: session.createdAt,
        expires_at: session.expiresAt,
      })
      .execute();
  }

  async findActive(
    idHash: string,
    now: number,
  ): Promise<{ session: DashboardSessionRecord; user: DashboardUserRecord } | undefined> {
    const row = await this.db
      .selectFrom('dashboard_sessions as s')
      .innerJoin('dashboard_users as u', 'u.id', 's.user_id')
      .select([
        's.id_hash',
        's.user_id',
        's.csrf_token',
        's.created_at as session_created_at',
        's.expires_at',
        'u.id',
        'u.account_id',
        'u.email',
        'u.password_hash',
        'u.created_at',
        'u.updated_at',
      ])
      .where('s.id_hash', '=', idHash)
      .where('s.expires_at', '>', now)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return {
      session: {
        idHash: row.id_hash,
        userId: row.user_id,
        csrfToken: row.csrf_token,
        createdAt: Number(row.session_created_at),
        expiresAt: Number(row.expires_at),
      },
      user: toDashboardUser(row),
    };
  }

  async delete(idHash: string): Promise<void> {
    await this.db.deleteFrom('dashboard_sessions').where('id_hash', '=', idHash).execute();
  }

  async deleteByUser(userId: string): Promise<void> {
    await this.db.deleteFrom('dashboard_sessions').where('user_id', '=', userId).execute();
  }

  async deleteExpired(now: number): Promise<number> {
    const result = await this.db
      .deleteFrom('dashboard_sessions')
      .where('expires_at', '<=', now)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
