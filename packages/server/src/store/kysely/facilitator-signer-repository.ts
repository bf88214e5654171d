import type { Kysely } from 'kysely';
import type { ChainFamily } from '../../domain/address.ts';
import type { FacilitatorSignerRecord } from '../../domain/records/settlement-records.ts';
import type { Database } from '../database-schema.ts';
import type { FacilitatorSignerRepository } from '../store.ts';

export class KyselyFacilitatorSignerRepository implements FacilitatorSignerRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(signer: FacilitatorSignerRecord): Promise<boolean> {
    const result = await this.db
      .insertInto('facilitator_signers')
      .values({
        address: signer.address,
        family: signer.family,
        encrypted_secret: signer.encryptedSecret,
        created_at: signer.createdAt,
      })
      .onConflict((oc) => oc.column('address').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  async list(family: ChainFamily): Promise<FacilitatorSignerRecord[]> {
    const rows = await this.db
      .selectFrom('facilitator_signers')
      .selectAll()
      .where('family', '=', family)
      .orderBy('created_at')
      .orderBy('address')
      .execute();
    return rows.map((row) => ({
      address: row.address,
      family: row.family as ChainFamily,
      encryptedSecret: row.encrypted_secret,
      createdAt: Number(row.created_at),
    }));
  }
}
