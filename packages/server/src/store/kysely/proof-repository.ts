import type { Kysely } from 'kysely';
import type { Database } from '../database-schema.ts';
import type { ProofRepository } from '../store.ts';

export class KyselyProofRepository implements ProofRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** The primary key decides: of two instances inserting at the same instant, one row wins. */
  async consume(proofKey: string, paymentId: string, accountId: string, at: number): Promise<boolean> {
    const result = await this.db
      .insertInto('consumed_proofs')
      .values({ proof_key: proofKey, payment_id: paymentId, account_id: accountId, consumed_at: at })
      .onConflict((oc) => oc.column('proof_key').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  async isConsumed(proofKey: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('consumed_proofs')
      .select('proof_key')
      .where('proof_key', '=', proofKey)
      .executeTakeFirst();
    return row !== undefined;
  }
}
