import { Readable } from 'node:stream';
import { canonicalAddress } from '../../../chains/canonical-address.ts';
import type { NetworkRegistry } from '../../../chains/network-registry.ts';
import { addressFamily } from '../../../domain/address.ts';
import { invalidParameters } from '../../../domain/gateway-error.ts';
import type { ExportCursor, ExportedPayment } from '../../../store/payment-export.ts';
import type { Store } from '../../../store/store.ts';
import type { WalletService } from '../../wallets/wallet-service.ts';
import { assetOfPayment, type PaymentAsset } from '../payment-asset.ts';
import { CSV_HEADER, type ExportFormat, exportLine, formatLine } from './export-format.ts';

/** Rows read per storage round trip: one page is written as one chunk. */
export const EXPORT_PAGE_SIZE = 1000;

export interface ExportRequest {
  readonly format: ExportFormat;
  /** Unix ms, Unix s is not accepted: see parseExportTime. */
  readonly from?: string | undefined;
  readonly to?: string | undefined;
  readonly wallet?: string | undefined;
}

export interface PaymentExport {
  readonly filename: string;
  readonly contentType: string;
  /** The file, written page by page as it is read: see PaymentExportService.open. */
  readonly body: Readable;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;
const UNIX_MS = /^\d{1,15}$/;
const DAY_MS = 86_400_000;

/**
 * `from` / `to` as Unix ms: Unix milliseconds (the API's own timestamps), an RFC 3339 date-time with its
 * zone, or a date (UTC). The range is [from, to): a time `to` is excluded, a date `to` includes that
 * whole day, as a person writing "from 2026-01-01 to 2026-01-31" means.
 */
export function parseExportTime(text: string, field: 'from' | 'to'): number {
  const rule = 'must be Unix milliseconds, an RFC 3339 date-time with a zone, or a date (YYYY-MM-DD, UTC)';
  let at: number;
  if (UNIX_MS.test(text)) at = Number(text);
  else if (DATE_ONLY.test(text)) at = Date.parse(`${text}T00:00:00Z`) + (field === 'to' ? DAY_MS : 0);
  else if (DATE_TIME.test(text)) at = Date.parse(text);
  else throw invalidParameters({ [field]: rule });
  // Date.parse takes 2026-02-30 as March 2nd: a day that does not exist is refused, not moved (a date, or
  // the date of a date-time).
  if (
    !Number.isFinite(at) ||
    (DATE_ONLY.test(text) &&
      new Date(at - (field === 'to' ? DAY_MS : 0)).toISOString().slice(0, 10) !== text) ||
    (DATE_TIME.test(text) && !isCalendarDay(text.slice(0, 10)))
  ) {
    throw invalidParameters({ [field]: `${rule}; ${text} is no such time` });
  }
  return at;
}

/**
 * CSV and JSON Lines exports of an account's payments (GET /payment/export, the dashboard's export form).
 * The file is streamed: pages of EXPORT_PAGE_SIZE rows are read by keyset (ExportPageQuery) only as the
 * client takes what was written, so memory holds a page or two whatever the row count, and a client
 * that reads slowly slows the reads instead of filling memory. Only the caller's account's payments
 * are ever read: the account id is part of every page's query, not a filter applied after.
 */
export class PaymentExportService {
  private open_ = 0;

  constructor(
    private readonly store: Store,
    private readonly networks: NetworkRegistry,
    private readonly wallets: WalletService,
    private readonly now: () => number = Date.now,
  ) {}

  /** Exports being written right now; back to 0 once every client has finished or gone. */
  get openExports(): number {
    return this.open_;
  }

  /**
   * Checks the request and reads the first page before answering, so a bad parameter or a storage
   * failure is a proper error response; a failure after that ends the stream early (the client sees the
   * response cut off, never a well-formed file missing rows).
   */
  async open(accountId: string, request: ExportRequest): Promise<PaymentExport> {
    const since = request.from === undefined ? 0 : parseExportTime(request.from, 'from');
    // Payments recorded after the export started are left for the next one: the file is one moment's.
    const until = request.to === undefined ? this.now() + 1 : parseExportTime(request.to, 'to');
    if (until <= since) throw invalidParameters({ to: 'must be after from' });
    let walletAddress: string | undefined;
    if (request.wallet !== undefined) {
      if (addressFamily(request.wallet) === undefined) {
        throw invalidParameters({ wallet: 'must be a Solana or EVM address' });
      }
      walletAddress = canonicalAddress(request.wallet);
    }
    const query = { accountId, walletAddress, since, until, limit: EXPORT_PAGE_SIZE };
    const first = await this.store.payments.exportPage(query);
    if (request.wallet !== undefined) {
      // As history: a local-mode payer need not be a wallet of the account, and the account's own
      // payments from it are exported; any other address not the account's is 403.
      const owned = await this.wallets.owned(accountId, request.wallet, 'wallet').then(
        () => true,
        (error: unknown) => error,
      );
      if (owned !== true && first.length === 0) throw owned;
    }
    const format = request.format;
    const assets = new Map<string, PaymentAsset>();
    const assetOf = (payment: Pick<ExportedPayment, 'network' | 'asset'>): PaymentAsset => {
      const key = `${payment.network} ${payment.asset?.address ?? ''} ${payment.asset?.decimals ?? ''}`;
      let asset = assets.get(key);
      if (asset === undefined) {
        asset = assetOfPayment(this.networks, payment);
        assets.set(key, asset);
      }
      return asset;
    };
    // The last row's assets, kept for the next: an export's rows are mostly of one network and asset,
    // so most rows make no key and look nothing up.
    let lastNetwork: string | undefined;
    let lastToken: ExportedPayment['asset'];
    let lastAsset: PaymentAsset | undefined;
    let lastNative: PaymentAsset | undefined;
    const chunkOf = (page: readonly ExportedPayment[]): string => {
      let chunk = '';
      for (const payment of page) {
        if (
          lastAsset === undefined ||
          lastNative === undefined ||
          payment.network !== lastNetwork ||
          payment.asset?.address !== lastToken?.address ||
          payment.asset?.decimals !== lastToken?.decimals
        ) {
          lastAsset = assetOf(payment);
          lastNative = assetOf({ network: payment.network });
          lastNetwork = payment.network;
          lastToken = payment.asset;
        }
        chunk += formatLine(exportLine(payment, lastAsset, lastNative), format);
      }
      return chunk;
    };
    const store = this.store;
    this.open_ += 1;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      this.open_ -= 1;
    };
    async function* pages(): AsyncGenerator<string> {
      try {
        if (format === 'csv') yield CSV_HEADER;
        let page = first;
        for (;;) {
          if (page.length > 0) yield chunkOf(page);
          const last = page.at(-1);
          if (last === undefined || page.length < EXPORT_PAGE_SIZE) return;
          const after: ExportCursor = { createdAt: last.createdAt, id: last.id };
          page = await store.payments.exportPage({ ...query, after });
        }
      } finally {
        close();
      }
    }
    // One chunk buffered ahead: the next page is read only once the socket took the last one.
    const body = Readable.from(pages(), { objectMode: false, highWaterMark: 1 });
    // A stream destroyed before its first read never starts the generator, so its finally never runs.
    body.once('close', close);
    const range = `${day(since)}_${day(until - 1)}`;
    const who = walletAddress === undefined ? 'account' : walletAddress.slice(0, 10);
    return {
      filename: `gate402-payments-${who}-${range}.${format}`,
      contentType:
        format === 'csv' ? 'text/csv; charset=utf-8; header=present' : 'application/jsonl; charset=utf-8',
      body,
    };
  }
}

/** Whether `date` (YYYY-MM-DD) names a day of the calendar. */
function isCalendarDay(date: string): boolean {
  const at = Date.parse(`${date}T00:00:00Z`);
  return Number.isFinite(at) && new Date(at).toISOString().slice(0, 10) === date;
}

function day(at: number): string {
  return new Date(Math.max(0, Math.min(at, 8.64e15))).toISOString().slice(0, 10);
}
