import type { PaymentRecord, PaymentSummary } from '../domain/records/payment-records.ts';

/**
 * One page of a payment export (GET /payment/export): the account's payments created in [since, until),
 * oldest first (created_at, then id), strictly after `after`. Keyset pages, not offsets: each page is one
 * index range scan from where the last one stopped, so the millionth row costs what the first did and
 * a row inserted meanwhile never shifts a page.
 */
export interface ExportPageQuery {
  readonly accountId: string;
  /** Only the payments of this wallet (its canonical spelling); absent: the whole account's. */
  readonly walletAddress?: string | undefined;
  readonly since: number;
  readonly until: number;
  /** The last payment of the previous page; absent: the first page. */
  readonly after?: ExportCursor | undefined;
  readonly limit: number;
}

/** Where a page of an export stopped. */
export interface ExportCursor {
  readonly createdAt: number;
  readonly id: string;
}

/** What an export row shows of a payment: its summary and what a reconciliation needs besides. */
export type ExportedPayment = PaymentSummary &
  Pick<
    PaymentRecord,
    'walletAddress' | 'mode' | 'fee' | 'blockHeight' | 'confirmedAt' | 'metadata' | 'refundReason'
  >;
