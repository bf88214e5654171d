import type { Kysely } from 'kysely';
import type { Database } from '../database-schema.ts';
import type { X402ReceiptRepository } from '../store.ts';

export class KyselyX402ReceiptRepository implements X402ReceiptRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** The primary key decides a first claim; the previous receipt's id decides a replacement. */
  async claim(
    identity: string,
    paymentId: string,
    previous: string | undefined,
    at: number,
  ): Promise<boolean> {
    if (previous === undefined) {
      const result = await this.db
        .insertInto('x402_receipts')
        .values({ identity, payment_id: paymentId, updated_at: at })
        .onConflict((oc) => oc.column('identity').doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
    }
    const result = await this.db
      .updateTable('x402_receipts')
      .set({ payment_id: paymentId, updated_at: at })
      .where('identity', '=', identity)
      .where('payment_id', '=', previous)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async get(identity: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('x402_receipts')
      .select('payment_id')
      .where('identity', '=', identity)
      .executeTakeFirst();
    return row?.payment_id;
  }
}
