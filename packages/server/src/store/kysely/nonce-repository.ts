import { type Kysely, sql } from 'kysely';
import type { Database } from '../database-schema.ts';
import type { NonceRepository } from '../store.ts';

export class KyselyNonceRepository implements NonceRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * One statement, so it is atomic on both databases: the insert creates the sequence at `floor`, or
   * the conflict branch takes max(next, floor) and moves past it. PostgreSQL locks the row until the
   * caller's transaction ends; SQLite holds its single write lock. Either way a second allocator sees
   * the first one's result, and a rolled-back transaction takes its nonce back with it.
   */
  async allocate(network: string, address: string, floor: bigint): Promise<bigint> {
    const row = await this.db
      .insertInto('wallet_nonces')
      .values({ network, address, next_nonce: Number(floor) + 1 })
      .onConflict((oc) =>
        oc.columns(['network', 'address']).doUpdateSet({
          next_nonce: sql<number>`case when wallet_nonces.next_nonce >= excluded.next_nonce
            then wallet_nonces.next_nonce + 1 else excluded.next_nonce end`,
        }),
      )
      .returning(sql<number | string>`next_nonce - 1`.as('nonce'))
      .executeTakeFirstOrThrow();
    return BigInt(row.nonce);
  }

  async release(network: string, address: string, nonce: bigint): Promise<boolean> {
    const result = await this.db
      .updateTable('wallet_nonces')
      .set({ next_nonce: Number(nonce) })
      .where('network', '=', network)
      .where('address', '=', address)
      .where('next_nonce', '=', Number(nonce) + 1)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}
