import type { Kysely, Selectable } from 'kysely';
import type {
  AssetLimitRecord,
  SpendPolicyRecord,
  SpendRecord,
} from '../../domain/records/spend-policy-records.ts';
import type { Database, SpendPoliciesTable } from '../database-schema.ts';
import type { SpendRepository } from '../store.ts';

/** The account's own policy is stored under this key id (a primary key column cannot be null). */
const ACCOUNT_SCOPE = '';
/** The native currency is stored under this asset (the same reason). */
const NATIVE = '';

/** Payments in these states paid nothing, so their spends no longer count against a cap. */
const ENDED_UNPAID = ['failed', 'expired', 'reverted'];

interface StoredRules {
  limits:
    | {
        network: string;
        asset: string | null;
        symbol: string | null;
        decimals: number;
        maxPerPayment: string | null;
        maxPerDay: string | null;
      }[]
    | null;
  allowedRecipients: string[] | null;
  allowedHosts: string[] | null;
  allowedNetworks: string[] | null;
}

export class KyselySpendRepository implements SpendRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async getPolicy(accountId: string, keyId: string | null): Promise<SpendPolicyRecord | undefined> {
    const row = await this.db
      .selectFrom('spend_policies')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('key_id', '=', keyId ?? ACCOUNT_SCOPE)
      .executeTakeFirst();
    return row && toPolicy(row);
  }

  async policiesFor(accountId: string, keyId: string | null): Promise<SpendPolicyRecord[]> {
    const rows = await this.db
      .selectFrom('spend_policies')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('key_id', 'in', keyId === null ? [ACCOUNT_SCOPE] : [ACCOUNT_SCOPE, keyId])
      .orderBy('key_id', 'asc')
      .execute();
    return rows.map(toPolicy);
  }

  async listPolicies(accountId: string): Promise<SpendPolicyRecord[]> {
    const rows = await this.db
      .selectFrom('spend_policies')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('key_id', 'asc')
      .execute();
    return rows.map(toPolicy);
  }

  async putPolicy(policy: SpendPolicyRecord): Promise<void> {
    const rules: StoredRules = {
      limits:
        policy.limits?.map((limit) => ({
          network: limit.network,
          asset: limit.asset,
          symbol: limit.symbol,
          decimals: limit.decimals,
          maxPerPayment: limit.maxPerPayment?.toString() ?? null,
          maxPerDay: limit.maxPerDay?.toString() ?? null,
        })) ?? null,
      allowedRecipients: policy.allowedRecipients === null ? null : [...policy.allowedRecipients],
      allowedHosts: policy.allowedHosts === null ? null : [...policy.allowedHosts],
      allowedNetworks: policy.allowedNetworks === null ? null : [...policy.allowedNetworks],
    };
    const text = JSON.stringify(rules);
    await this.db
      .insertInto('spend_policies')
      .values({
        account_id: policy.accountId,
        key_id: policy.keyId ?? ACCOUNT_SCOPE,
        rules: text,
        expires_at: policy.expiresAt,
        created_at: policy.createdAt,
        updated_at: policy.updatedAt,
      })
      .onConflict((oc) =>
        oc.columns(['account_id', 'key_id']).doUpdateSet({
          rules: text,
          expires_at: policy.expiresAt,
          updated_at: policy.updatedAt,
        }),
      )
      .execute();
  }

  async deletePolicy(accountId: string, keyId: string | null): Promise<boolean> {
    const result = await this.db
      .deleteFrom('spend_policies')
      .where('account_id', '=', accountId)
      .where('key_id', '=', keyId ?? ACCOUNT_SCOPE)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /**
   * An upsert that always writes the row: PostgreSQL holds its row lock until the transaction ends, and a
   * second spender's upsert waits for it — then, under READ COMMITTED, its next statement (spentSince)
   * reads a snapshot that includes the first one's committed spend.
   */
  async lockAsset(accountId: string, network: string, asset: string | null, at: number): Promise<void> {
    await this.db
      .insertInto('spend_locks')
      .values({ account_id: accountId, network, asset: asset ?? NATIVE, updated_at: at })
      .onConflict((oc) =>
        oc.columns(['account_id', 'network', 'asset']).doUpdateSet((eb) => ({
          updated_at: eb.ref('excluded.updated_at'),
        })),
      )
      .execute();
  }

  async spentSince(
    accountId: string,
    network: string,
    asset: string | null,
    since: number,
  ): Promise<{ keyId: string | null; amount: bigint; createdAt: number }[]> {
    // Summed here with bigint, not by SQL: token amounts outgrow SQLite's 64-bit integers.
    const rows = await this.db
      .selectFrom('spend_records as s')
      .innerJoin('payments as p', 'p.id', 's.payment_id')
      .select(['s.key_id', 's.amount', 's.created_at'])
      .where('s.account_id', '=', accountId)
      .where('s.network', '=', network)
      .where('s.asset', '=', asset ?? NATIVE)
      .where('s.created_at', '>', since)
      .where('p.status', 'not in', ENDED_UNPAID)
      .execute();
    return rows.map((row) => ({
      keyId: row.key_id,
      amount: BigInt(row.amount),
      createdAt: Number(row.created_at),
    }));
  }

  async recordSpend(spend: SpendRecord): Promise<void> {
    await this.db
      .insertInto('spend_records')
      .values({
        payment_id: spend.paymentId,
        account_id: spend.accountId,
        key_id: spend.keyId,
        network: spend.network,
        asset: spend.asset ?? NATIVE,
        amount: spend.amount.toString(),
        created_at: spend.createdAt,
      })
      .execute();
  }

  async pruneSpends(accountId: string, network: string, asset: string | null, before: number): Promise<void> {
    await this.db
      .deleteFrom('spend_records')
      .where('account_id', '=', accountId)
      .where('network', '=', network)
      .where('asset', '=', asset ?? NATIVE)
      .where('created_at', '<', before)
      .execute();
  }
}

function toPolicy(row: Selectable<SpendPoliciesTable>): SpendPolicyRecord {
  const rules = JSON.parse(row.rules) as StoredRules;
  return {
    accountId: row.account_id,
    keyId: row.key_id === ACCOUNT_SCOPE ? null : row.key_id,
    limits: rules.limits === null ? null : rules.limits.map(toLimit),
    allowedRecipients: rules.allowedRecipients,
    allowedHosts: rules.allowedHosts,
    allowedNetworks: rules.allowedNetworks,
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

function toLimit(limit: NonNullable<StoredRules['limits']>[number]): AssetLimitRecord {
  return {
    network: limit.network,
    asset: limit.asset,
    symbol: limit.symbol,
    decimals: limit.decimals,
    maxPerPayment: limit.maxPerPayment === null ? null : BigInt(limit.maxPerPayment),
    maxPerDay: limit.maxPerDay === null ? null : BigInt(limit.maxPerDay),
  };
}
