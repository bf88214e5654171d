import type { Insertable, Kysely } from 'kysely';
import type { ConsumedProofsTable, Database } from '../database-schema.ts';
import type { ProofRepository } from '../store.ts';
import { compiledInsertOnce, compiledOnce } from './compiled-query.ts';

// Every receive checks and consumes a proof: both compiled once (see compiled-query.ts).
const insertConsumedProof = compiledInsertOnce(
  ['proof_key', 'payment_id', 'account_id', 'consumed_at'] satisfies (keyof ConsumedProofsTable)[],
  (db: Kysely<Database>, row: Insertable<ConsumedProofsTable>) =>
    db
      .insertInto('consumed_proofs')
      .values(row)
      .onConflict((oc) => oc.column('proof_key').doNothing())
      .compile(),
);

const findConsumedProof = compiledOnce((db: Kysely<Database>) =>
  db.selectFrom('consumed_proofs').select('proof_key').where('proof_key', '=', '').compile(),
);

export class KyselyProofRepository implements ProofRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** The primary key decides: of two instances inserting at the same instant, one row wins. */
  async consume(proofKey: string, paymentId: string, accountId: string, at: number): Promise<boolean> {
    const result = await insertConsumedProof(this.db, {
      proof_key: proofKey,
      payment_id: paymentId,
      account_id: accountId,
      consumed_at: at,
    });
    return Number(result.numAffectedRows ?? 0n) === 1;
  }

  async isConsumed(proofKey: string): Promise<boolean> {
    const rows = await findConsumedProof(this.db, proofKey);
    return rows.length > 0;
  }
}
