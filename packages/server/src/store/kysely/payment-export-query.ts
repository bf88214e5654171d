import { type Kysely, type Selectable, sql } from 'kysely';
import type { PaymentDirection, PaymentMode, PaymentStatus } from '../../domain/payment-status.ts';
import type { Database, PaymentsTable } from '../database-schema.ts';
import type { ExportedPayment, ExportPageQuery } from '../payment-export.ts';
import { compiledOnce } from './compiled-query.ts';

const EXPORT_COLUMNS = [
  'id',
  'direction',
  'mode',
  'status',
  'network',
  'wallet_address',
  'sender',
  'recipient',
  'amount',
  'fee',
  'resource',
  'signature',
  'block_height',
  'created_at',
  'confirmed_at',
  'asset',
  'asset_decimals',
  'refund_of',
  'refund_reason',
  'metadata',
] as const satisfies readonly (keyof PaymentsTable)[];

type ExportRow = Pick<Selectable<PaymentsTable>, (typeof EXPORT_COLUMNS)[number]>;

/**
 * The page query in its four shapes (with or without a wallet, first page or after a cursor), each built
 * and compiled once: a page is then one cached prepared statement run with new values, not a Kysely
 * query built, compiled and looked up again for every thousand rows. Placeholders are bound in this
 * order: account, since, until, [wallet], [after.createdAt, after.id], limit.
 */
function pageQuery(wallet: boolean, after: boolean) {
  return compiledOnce<Database, ExportRow>((db) => {
    let page = db
      .selectFrom('payments')
      .select(EXPORT_COLUMNS)
      .where('account_id', '=', '')
      .where('created_at', '>=', 0)
      .where('created_at', '<', 0);
    if (wallet) page = page.where('wallet_address', '=', '');
    if (after) page = page.where(sql<boolean>`(created_at, id) > (${0}, ${''})`);
    return page.orderBy('created_at', 'asc').orderBy('id', 'asc').limit(0).compile();
  });
}

const PAGE_QUERIES = {
  first: pageQuery(false, false),
  after: pageQuery(false, true),
  walletFirst: pageQuery(true, false),
  walletAfter: pageQuery(true, true),
};

/**
 * One keyset page of an export. With a wallet it is a range of the `payments_history` index
 * (account, wallet, created_at, id); without, of `payments_account_created` (account, created_at, id):
 * either way the rows come in index order and nothing is sorted or skipped. The row-value comparison
 * `(created_at, id) > (?, ?)` is understood by both SQLite and PostgreSQL as the index's own order.
 */
export async function exportPage(db: Kysely<Database>, query: ExportPageQuery): Promise<ExportedPayment[]> {
  const after = query.after;
  // After a cursor the range starts at the cursor's time, not at `since`: SQLite does not seek by the
  // row value, so with `since` as the lower bound every page walked the index from the export's first
  // row to the cursor — quadratic, a million rows read half a billion index entries. The row value
  // still drops the cursor's own time's rows up to its id.
  const from = after === undefined ? query.since : Math.max(query.since, after.createdAt);
  const parameters: unknown[] = [query.accountId, from, query.until];
  if (query.walletAddress !== undefined) parameters.push(query.walletAddress);
  if (after !== undefined) parameters.push(after.createdAt, after.id);
  parameters.push(query.limit);
  const run =
    query.walletAddress === undefined
      ? after === undefined
        ? PAGE_QUERIES.first
        : PAGE_QUERIES.after
      : after === undefined
        ? PAGE_QUERIES.walletFirst
        : PAGE_QUERIES.walletAfter;
  const rows = await run(db, ...parameters);
  const page = new Array<ExportedPayment>(rows.length);
  for (let i = 0; i < rows.length; i++) page[i] = toExported(rows[i] as ExportRow);
  return page;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** One object of one shape per row (no spreads of optional parts): a million rows make a million objects. */
function toExported(row: ExportRow): ExportedPayment {
  const payment: Mutable<ExportedPayment> = {
    id: row.id,
    direction: row.direction as PaymentDirection,
    mode: row.mode as PaymentMode,
    status: row.status as PaymentStatus,
    network: row.network,
    walletAddress: row.wallet_address,
    sender: row.sender,
    recipient: row.recipient,
    amount: BigInt(row.amount),
    fee: row.fee === null ? null : BigInt(row.fee),
    resource: row.resource,
    signature: row.signature,
    blockHeight: row.block_height === null ? null : BigInt(row.block_height),
    createdAt: Number(row.created_at),
    confirmedAt: row.confirmed_at === null ? null : Number(row.confirmed_at),
    metadata: parseMetadata(row.metadata),
  };
  if (row.asset !== null && row.asset_decimals !== null) {
    payment.asset = { address: row.asset, decimals: Number(row.asset_decimals) };
  }
  if (row.refund_of !== null) payment.refundOf = row.refund_of;
  if (row.refund_reason !== null) payment.refundReason = row.refund_reason;
  return payment;
}

function parseMetadata(text: unknown): Readonly<Record<string, unknown>> | null {
  if (text === null || text === undefined) return null;
  if (typeof text === 'object') return text as Record<string, unknown>;
  return JSON.parse(String(text)) as Record<string, unknown>;
}
