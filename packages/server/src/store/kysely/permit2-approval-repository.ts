import type { Kysely } from 'kysely';
import type { Database } from '../database-schema.ts';
import type { Permit2ApprovalRepository } from '../store.ts';

export class KyselyPermit2ApprovalRepository implements Permit2ApprovalRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async get(network: string, walletAddress: string, token: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('permit2_approvals')
      .select('payment_id')
      .where('network', '=', network)
      .where('wallet_address', '=', walletAddress)
      .where('token', '=', token)
      .executeTakeFirst();
    return row?.payment_id;
  }

  async claim(
    network: string,
    walletAddress: string,
    token: string,
    paymentId: string,
    replacing: string | undefined,
    at: number,
  ): Promise<boolean> {
    if (replacing === undefined) {
      const inserted = await this.db
        .insertInto('permit2_approvals')
        .values({
          network,
          wallet_address: walletAddress,
          token,
          payment_id: paymentId,
          created_at: at,
          updated_at: at,
        })
        .onConflict((oc) => oc.columns(['network', 'wallet_address', 'token']).doNothing())
        .executeTakeFirst();
      return Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1;
    }
    const updated = await this.db
      .updateTable('permit2_approvals')
      .set({ payment_id: paymentId, updated_at: at })
      .where('network', '=', network)
      .where('wallet_address', '=', walletAddress)
      .where('token', '=', token)
      .where('payment_id', '=', replacing)
      .executeTakeFirst();
    return Number(updated.numUpdatedRows) === 1;
  }
}
