import { type Kysely, type Selectable, sql } from 'kysely';
import type { PaymentDirection, PaymentMode, PaymentStatus } from '../../domain/payment-status.ts';
import type { Database, PaymentsTable } from '../database-schema.ts';
import type { ExportedPayment, ExportPageQuery } from '../payment-export.ts';

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
 * One keyset page of an export. With a wallet it is a range of the `payments_history` index
 * (account, wallet, created_at, id); without, of `payments_account_created` (account, created_at, id):
 * either way the rows come in index order and nothing is sorted or skipped. The row-value comparison
 * `(created_at, id) > (?, ?)` is understood by both SQLite and PostgreSQL as the index's own order.
 */
export async function exportPage(db: Kysely<Database>, query: ExportPageQuery): Promise<ExportedPayment[]> {
  let page = db
    .selectFrom('payments')
    .select(EXPORT_COLUMNS)
    .where('account_id', '=', query.accountId)
    .where('created_at', '>=', query.since)
    .where('created_at', '<', query.until);
  if (query.walletAddress !== undefined) page = page.where('wallet_address', '=', query.walletAddress);
  const after = query.after;
  if (after !== undefined)
    page = page.where(sql<boolean>`(created_at, id) > (${after.createdAt}, ${after.id})`);
  const rows = await page.orderBy('created_at', 'asc').orderBy('id', 'asc').limit(query.limit).execute();
  return rows.map(toExported);
}

function toExported(row: ExportRow): ExportedPayment {
  return {
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
    ...(row.asset === null || row.asset_decimals === null
      ? {}
      : { asset: { address: row.asset, decimals: Number(row.asset_decimals) } }),
    ...(row.refund_of === null ? {} : { refundOf: row.refund_of }),
    ...(row.refund_reason === null ? {} : { refundReason: row.refund_reason }),
  };
}

function parseMetadata(text: unknown): Readonly<Record<string, unknown>> | null {
  if (text === null || text === undefined) return null;
  if (typeof text === 'object') return text as Record<string, unknown>;
  return JSON.parse(String(text)) as Record<string, unknown>;
}
