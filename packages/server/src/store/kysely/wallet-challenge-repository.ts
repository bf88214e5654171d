import type { Kysely, Selectable } from 'kysely';
import type { ChainFamily } from '../../domain/address.ts';
import type { WalletChallengeRecord } from '../../domain/records/wallet-records.ts';
import type { Database, WalletChallengesTable } from '../database-schema.ts';
import type { WalletChallengeRepository } from '../store.ts';

export class KyselyWalletChallengeRepository implements WalletChallengeRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(challenge: WalletChallengeRecord): Promise<void> {
    await this.db
      .insertInto('wallet_challenges')
      .values({
        nonce: challenge.nonce,
        account_id: challenge.accountId,
        family: challenge.family,
        address: challenge.address,
        message: challenge.message,
        created_at: challenge.createdAt,
        expires_at: challenge.expiresAt,
        used_at: challenge.usedAt,
      })
      .execute();
  }

  async get(nonce: string): Promise<WalletChallengeRecord | undefined> {
    const row = await this.db
      .selectFrom('wallet_challenges')
      .selectAll()
      .where('nonce', '=', nonce)
      .executeTakeFirst();
    return row && toChallenge(row);
  }

  /** `used_at is null` in the update decides between two requests answering one challenge at once. */
  async markUsed(nonce: string, at: number): Promise<boolean> {
    const result = await this.db
      .updateTable('wallet_challenges')
      .set({ used_at: at })
      .where('nonce', '=', nonce)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async deleteExpired(before: number): Promise<number> {
    const result = await this.db
      .deleteFrom('wallet_challenges')
      .where('expires_at', '<=', before)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

function toChallenge(row: Selectable<WalletChallengesTable>): WalletChallengeRecord {
  return {
    nonce: row.nonce,
    accountId: row.account_id,
    family: row.family as ChainFamily,
    address: row.address,
    message: row.message,
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
    usedAt: row.used_at === null ? null : Number(row.used_at),
  };
}
