import type { Kysely } from 'kysely';
import type { Database } from '../database-schema.ts';
import type { SponsoredFeeRepository } from '../store.ts';

/**
 * How many times a compare-and-set is retried when other writers keep moving the row. Each retry
 * follows a commit by another writer (PostgreSQL re-reads the committed row), so running out means
 * sustained contention on one account's day, answered as an error rather than a guess.
 */
const MAX_ATTEMPTS = 50;

/**
 * Totals are text (wei sums outgrow a 64-bit integer), so the arithmetic is done here with bigint and
 * written back by compare-and-set on the value read: on SQLite the transaction holds the single write
 * lock anyway; on PostgreSQL an UPDATE that waited for a concurrent writer re-checks its WHERE against
 * the committed row and changes nothing if the total moved, and the loop reads it again. Either way two
 * reservations never both see room that only one of them fits in.
 */
export class KyselySponsoredFeeRepository implements SponsoredFeeRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async reserve(
    accountId: string,
    network: string,
    day: string,
    amount: bigint,
    limit: bigint,
    at: number,
  ): Promise<bigint | undefined> {
    let result: bigint | undefined;
    await this.update(accountId, network, day, at, (total) => {
      const next = total + amount;
      if (next > limit) {
        result = undefined;
        return undefined;
      }
      result = next;
      return next;
    });
    return result;
  }

  async adjust(accountId: string, network: string, day: string, delta: bigint, at: number): Promise<void> {
    if (delta === 0n) return;
    await this.update(accountId, network, day, at, (total) => {
      const next = total + delta;
      return next < 0n ? 0n : next;
    });
  }

  async spent(accountId: string, network: string, day: string): Promise<bigint> {
    const row = await this.db
      .selectFrom('x402_sponsored_fees')
      .select('amount')
      .where('account_id', '=', accountId)
      .where('network', '=', network)
      .where('day', '=', day)
      .executeTakeFirst();
    return row === undefined ? 0n : BigInt(row.amount);
  }

  /** Reads the total, asks `next` for the new one (undefined: leave it), and writes it by compare-and-set. */
  private async update(
    accountId: string,
    network: string,
    day: string,
    at: number,
    next: (total: bigint) => bigint | undefined,
  ): Promise<void> {
    await this.db
      .insertInto('x402_sponsored_fees')
      .values({ account_id: accountId, network, day, amount: '0', updated_at: at })
      .onConflict((oc) => oc.columns(['account_id', 'network', 'day']).doNothing())
      .execute();
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const current = await this.spent(accountId, network, day);
      const value = next(current);
      if (value === undefined || value === current) return;
      const result = await this.db
        .updateTable('x402_sponsored_fees')
        .set({ amount: value.toString(), updated_at: at })
        .where('account_id', '=', accountId)
        .where('network', '=', network)
        .where('day', '=', day)
        .where('amount', '=', current.toString())
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) === 1) return;
    }
    throw new Error(`the sponsored fees of ${accountId} on ${network} (${day}) kept changing`);
  }
}
