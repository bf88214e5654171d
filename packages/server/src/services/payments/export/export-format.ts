import { atomicToDecimalText } from '../../../domain/money.ts';
import type { ExportedPayment } from '../../../store/payment-export.ts';
import type { PaymentAsset } from '../payment-asset.ts';

export type ExportFormat = 'csv' | 'jsonl';

/**
 * One exported payment, as both formats write it. Amounts are exact decimal text (never a float: a
 * spreadsheet sum of 0.1 + 0.2 must not drift) beside the atomic integer they come from, with the asset
 * that names their unit; times are ISO 8601 UTC and Unix ms.
 */
export interface ExportLine {
  readonly paymentId: string;
  readonly type: 'sent' | 'received' | 'refund';
  readonly status: string;
  readonly mode: string;
  readonly network: string;
  readonly wallet: string;
  readonly sender: string;
  readonly recipient: string;
  readonly amount: string;
  readonly asset: string | null;
  readonly assetAddress: string | null;
  readonly decimals: number;
  readonly amountAtomic: string;
  /** The network fee the sender paid, in the network's native currency (feeAsset), when known. */
  readonly fee: string | null;
  readonly feeAsset: string | null;
  readonly resource: string | null;
  readonly signature: string | null;
  readonly blockHeight: string | null;
  readonly createdAt: string;
  readonly timestamp: number;
  readonly confirmedAt: string | null;
  readonly refundOf: string | null;
  readonly refundReason: string | null;
  readonly metadata: Readonly<Record<string, unknown>> | null;
}

/** The CSV header, and the order of every row's cells. */
export const EXPORT_COLUMNS = [
  'paymentId',
  'type',
  'status',
  'mode',
  'network',
  'wallet',
  'sender',
  'recipient',
  'amount',
  'asset',
  'assetAddress',
  'decimals',
  'amountAtomic',
  'fee',
  'feeAsset',
  'resource',
  'signature',
  'blockHeight',
  'createdAt',
  'timestamp',
  'confirmedAt',
  'refundOf',
  'refundReason',
  'metadata',
] as const satisfies readonly (keyof ExportLine)[];

export function exportLine(payment: ExportedPayment, asset: PaymentAsset, native: PaymentAsset): ExportLine {
  return {
    paymentId: payment.id,
    type: payment.refundOf === undefined ? payment.direction : 'refund',
    status: payment.status,
    mode: payment.mode,
    network: payment.network,
    wallet: payment.walletAddress,
    sender: payment.sender,
    recipient: payment.recipient,
    amount: atomicToDecimalText(payment.amount, asset.decimals),
    asset: asset.symbol,
    assetAddress: asset.address,
    decimals: asset.decimals,
    amountAtomic: payment.amount.toString(),
    fee: payment.fee === null ? null : atomicToDecimalText(payment.fee, native.decimals),
    feeAsset: payment.fee === null ? null : native.symbol,
    resource: payment.resource,
    signature: payment.signature,
    blockHeight: payment.blockHeight === null ? null : payment.blockHeight.toString(),
    createdAt: new Date(payment.createdAt).toISOString(),
    timestamp: payment.createdAt,
    confirmedAt: payment.confirmedAt === null ? null : new Date(payment.confirmedAt).toISOString(),
    refundOf: payment.refundOf ?? null,
    refundReason: payment.refundReason ?? null,
    metadata: payment.metadata,
  };
}

/**
 * One CSV cell. A cell a spreadsheet would run as a formula (it starts with = + - @, a tab or a CR —
 * OWASP's CSV injection list) is prefixed with `'`, which shows the text as it is; then the cell is
 * quoted when it holds a quote, comma or line break, quotes doubled (RFC 4180). Every value a payer
 * controls (metadata, resource, refund reason) goes through here, so no payer writes a formula into
 * the seller's spreadsheet.
 */
export function csvCell(value: string | number | null | Readonly<Record<string, unknown>>): string {
  if (value === null) return '';
  return csvText(typeof value === 'object' ? JSON.stringify(value) : String(value));
}

/**
 * csvCell of a text. Most cells of an export (ids, addresses, amounts, times) need neither the prefix
 * nor quotes: one pass over the characters says so and the text is the cell, with no regular
 * expression run and no string made.
 */
function csvText(text: string): string {
  const first = text.charCodeAt(0);
  const formula =
    first === 61 /* = */ ||
    first === 43 /* + */ ||
    first === 45 /* - */ ||
    first === 64 /* @ */ ||
    first === 9 /* tab */ ||
    first === 13; /* CR */
  let quote = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */ || c === 44 /* , */ || c === 13 /* CR */ || c === 10 /* LF */) {
      quote = true;
      break;
    }
  }
  const cell = formula ? `'${text}` : text;
  return quote ? `"${cell.replaceAll('"', '""')}"` : cell;
}

/** Lines end with CRLF, as RFC 4180 says. */
export function csvRow(
  cells: readonly (string | number | null | Readonly<Record<string, unknown>>)[],
): string {
  let row = '';
  for (let i = 0; i < cells.length; i++) {
    const cell = csvCell(cells[i] as string | number | null | Readonly<Record<string, unknown>>);
    row += i === 0 ? cell : `,${cell}`;
  }
  return `${row}\r\n`;
}

export const CSV_HEADER = csvRow(EXPORT_COLUMNS);

/** One export line as a CSV row, its cells in EXPORT_COLUMNS order (no array of cells made on the way). */
function csvLine(line: ExportLine): string {
  let row = csvCell(line[EXPORT_COLUMNS[0]]);
  for (let i = 1; i < EXPORT_COLUMNS.length; i++)
    row += `,${csvCell(line[EXPORT_COLUMNS[i] as keyof ExportLine])}`;
  return `${row}\r\n`;
}

export function formatLine(line: ExportLine, format: ExportFormat): string {
  return format === 'csv' ? csvLine(line) : `${JSON.stringify(line)}\n`;
}
