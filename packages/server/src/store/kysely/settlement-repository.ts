import type { Kysely, Selectable } from 'kysely';
import type {
  SettlementRecord,
  SettlementStatus,
  SponsoredApprovalStep,
} from '../../domain/records/settlement-records.ts';
import type { Database, X402SettlementsTable } from '../database-schema.ts';
import type { SettlementRepository } from '../store.ts';

export class KyselySettlementRepository implements SettlementRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** The primary key decides: of two instances claiming the same payment at once, one row wins. */
  async claim(s: SettlementRecord): Promise<boolean> {
    const result = await this.db
      .insertInto('x402_settlements')
      .values({
        settlement_key: s.key,
        network: s.network,
        payer: s.payer,
        pay_to: s.payTo,
        asset: s.asset,
        amount: s.amount.toString(),
        transaction_id: s.transactionId,
        signed_transaction: s.signedTransaction,
        last_valid_block_height: s.lastValidBlockHeight === null ? null : s.lastValidBlockHeight.toString(),
        status: s.status,
        error: s.error,
        payment_id: s.paymentId,
        created_at: s.createdAt,
        updated_at: s.updatedAt,
        claimed_by_account_id: s.claimedBy?.accountId ?? null,
        claimed_by_idempotency_key: s.claimedBy?.idempotencyKey ?? null,
        resource: s.resource ?? null,
        account_id: s.accountId ?? null,
        sponsored_fee: s.sponsoredFee == null ? null : s.sponsoredFee.amount.toString(),
        fee_day: s.sponsoredFee == null ? null : s.sponsoredFee.day,
        sponsored_approval: s.sponsoredApproval == null ? null : approvalText(s.sponsoredApproval),
      })
      .onConflict((oc) => oc.column('settlement_key').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  /** The primary key decides: of two claims funding the same buyer approval, one row wins. */
  async claimApproval(approvalKey: string, settlementKey: string, at: number): Promise<boolean> {
    const result = await this.db
      .insertInto('x402_sponsored_approvals')
      .values({ approval_key: approvalKey, settlement_key: settlementKey, created_at: at })
      .onConflict((oc) => oc.column('approval_key').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  async releaseApproval(approvalKey: string, settlementKey: string): Promise<void> {
    await this.db
      .deleteFrom('x402_sponsored_approvals')
      .where('approval_key', '=', approvalKey)
      .where('settlement_key', '=', settlementKey)
      .execute();
  }

  async get(key: string): Promise<SettlementRecord | undefined> {
    const row = await this.db
      .selectFrom('x402_settlements')
      .selectAll()
      .where('settlement_key', '=', key)
      .executeTakeFirst();
    return row && toSettlement(row);
  }

  async findByPayment(paymentId: string): Promise<SettlementRecord | undefined> {
    const row = await this.db
      .selectFrom('x402_settlements')
      .selectAll()
      .where('payment_id', '=', paymentId)
      .executeTakeFirst();
    return row && toSettlement(row);
  }

  async listOpen(updatedBefore: number, limit: number): Promise<SettlementRecord[]> {
    const rows = await this.db
      .selectFrom('x402_settlements')
      .selectAll()
      .where('status', 'in', ['claimed', 'submitted'])
      .where('updated_at', '<=', updatedBefore)
      .orderBy('updated_at', 'asc')
      .limit(limit)
      .execute();
    return rows.map(toSettlement);
  }

  async transition(
    key: string,
    from: readonly SettlementStatus[],
    status: SettlementStatus,
    changes: {
      readonly error?: string | null;
      readonly paymentId?: string | null;
      readonly transactionId?: string;
      readonly sponsoredFee?: bigint;
      readonly sponsoredApproval?: SponsoredApprovalStep;
    },
    at: number,
  ): Promise<SettlementRecord | undefined> {
    const row = await this.db
      .updateTable('x402_settlements')
      .set({
        status,
        updated_at: at,
        ...(changes.error === undefined ? {} : { error: changes.error }),
        ...(changes.paymentId === undefined ? {} : { payment_id: changes.paymentId }),
        ...(changes.transactionId === undefined ? {} : { transaction_id: changes.transactionId }),
        ...(changes.sponsoredFee === undefined ? {} : { sponsored_fee: changes.sponsoredFee.toString() }),
        ...(changes.sponsoredApproval === undefined
          ? {}
          : { sponsored_approval: approvalText(changes.sponsoredApproval) }),
      })
      .where('settlement_key', '=', key)
      .where('status', 'in', [...from])
      .returningAll()
      .executeTakeFirst();
    return row && toSettlement(row);
  }
}

function toSettlement(row: Selectable<X402SettlementsTable>): SettlementRecord {
  return {
    key: row.settlement_key,
    network: row.network,
    payer: row.payer,
    payTo: row.pay_to,
    asset: row.asset,
    amount: BigInt(row.amount),
    transactionId: row.transaction_id,
    signedTransaction: row.signed_transaction,
    lastValidBlockHeight: row.last_valid_block_height === null ? null : BigInt(row.last_valid_block_height),
    status: row.status as SettlementStatus,
    error: row.error,
    paymentId: row.payment_id,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    claimedBy:
      row.claimed_by_account_id === null || row.claimed_by_idempotency_key === null
        ? null
        : { accountId: row.claimed_by_account_id, idempotencyKey: row.claimed_by_idempotency_key },
    resource: row.resource,
    accountId: row.account_id,
    sponsoredFee:
      row.sponsored_fee === null || row.fee_day === null
        ? null
        : { day: row.fee_day, amount: BigInt(row.sponsored_fee) },
    sponsoredApproval: row.sponsored_approval === null ? null : approvalOf(row.sponsored_approval),
  };
}

function approvalText(step: SponsoredApprovalStep): string {
  return JSON.stringify({ ...step, funded: step.funded.toString() });
}

function approvalOf(text: string): SponsoredApprovalStep {
  const step = JSON.parse(text) as Omit<SponsoredApprovalStep, 'funded'> & { funded: string };
  return { ...step, funded: BigInt(step.funded) };
}
