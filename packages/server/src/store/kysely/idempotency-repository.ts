import type { Kysely } from 'kysely';
import type { Database } from '../database-schema.ts';
import type { IdempotencyClaim, IdempotencyRepository } from '../store.ts';

export class KyselyIdempotencyRepository implements IdempotencyRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async claim(
    accountId: string,
    key: string,
    requestHash: string,
    now: number,
    lockedUntil: number,
  ): Promise<IdempotencyClaim> {
    const inserted = await this.db
      .insertInto('idempotency_keys')
      .values({
        account_id: accountId,
        key,
        request_hash: requestHash,
        locked_until: lockedUntil,
        created_at: now,
      })
      .onConflict((oc) => oc.columns(['account_id', 'key']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1) return { state: 'claimed' };

    const row = await this.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .executeTakeFirst();
    if (row === undefined) return this.claim(accountId, key, requestHash, now, lockedUntil);
    if (row.request_hash !== requestHash) return { state: 'mismatch' };
    if (row.response_status !== null && row.response_body !== null) {
      return { state: 'completed', status: row.response_status, body: row.response_body };
    }
    if (row.locked_until !== null && Number(row.locked_until) > now) return { state: 'in_progress' };
    // The first request's process died mid-way: take the claim over, compare-and-set on the old lock.
    const taken = await this.db
      .updateTable('idempotency_keys')
      .set({ locked_until: lockedUntil })
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .where('response_status', 'is', null)
      .where('locked_until', '=', row.locked_until)
      .executeTakeFirst();
    return Number(taken.numUpdatedRows) === 1 ? { state: 'claimed' } : { state: 'in_progress' };
  }

  async extend(accountId: string, key: string, lockedUntil: number): Promise<void> {
    await this.db
      .updateTable('idempotency_keys')
      .set({ locked_until: lockedUntil })
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .where('response_status', 'is', null)
      .execute();
  }

  async complete(accountId: string, key: string, status: number, body: string): Promise<void> {
    await this.db
      .updateTable('idempotency_keys')
      .set({ response_status: status, response_body: body, locked_until: null })
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .execute();
  }

  async release(accountId: string, key: string): Promise<void> {
    await this.db
      .deleteFrom('idempotency_keys')
      .where('account_id', '=', accountId)
      .where('key', '=', key)
      .where('response_status', 'is', null)
      .execute();
  }

  async purge(before: number): Promise<number> {
    const result = await this.db
      .deleteFrom('idempotency_keys')
      .where('created_at', '<', before)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
