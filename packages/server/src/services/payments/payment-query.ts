import { canonicalAddress } from '../../chains/canonical-address.ts';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { addressFamily } from '../../domain/address.ts';
import { GatewayError } from '../../domain/gateway-error.ts';
import { toWholeUnits } from '../../domain/money.ts';
import type { PaymentDirection, PaymentStatus } from '../../domain/payment-status.ts';
import type { PaymentSummary } from '../../domain/records/payment-records.ts';
import type { Store } from '../../store/store.ts';
import type { WalletService } from '../wallets/wallet-service.ts';
import { HistoryPageCache, type RenderedPage } from './history-page-cache.ts';
import { assetOfPayment, type PaymentAsset } from './payment-asset.ts';
import { PaymentStatusCache } from './payment-status-cache.ts';
import { type PaymentView, paymentView } from './payment-view.ts';
import { refundsView } from './refunds/refund-totals.ts';

/** How long a network's block height is reused for confirmation counts. */
const HEIGHT_TTL_MS = 400;

/** One entry of a wallet's history (spec §2.4). */
export interface HistoryEntry {
  paymentId: string;
  /** `refund`: a sent payment that refunds one the account received (listed with `sent`). */
  type: PaymentDirection | 'refund';
  refundOf?: string;
  amount: number;
  recipient?: string;
  sender?: string;
  resource?: string;
  status: string;
  timestamp: number;
  signature: string | null;
  network: string;
  /** What `amount` is in: the native currency (`address: null`) or a token (x402 `exact`). */
  asset: PaymentAsset;
}

/** One page of a wallet's history (GET /payment/history). */
export interface HistoryPage {
  walletAddress: string;
  total: number;
  limit: number;
  offset: number;
  payments: HistoryEntry[];
}

/** Status and history, always scoped to the caller's account. */
export class PaymentQueryService {
  private readonly heights = new Map<string, { at: number; height: Promise<bigint | undefined> }>();
  /** Payments status showed, kept while storage certainly still holds them so (see PaymentStatusCache). */
  private readonly statusCache: PaymentStatusCache;
  /** History pages as sent, kept while the wallet's history version is unchanged. */
  private readonly pages = new HistoryPageCache();

  constructor(
    private readonly store: Store,
    private readonly networks: NetworkRegistry,
    private readonly wallets: WalletService,
    private readonly now: () => number = Date.now,
  ) {
    this.statusCache = new PaymentStatusCache(store);
  }

  /** Another account's payment is answered exactly like a missing one: 404 PAYMENT_NOT_FOUND. */
  async status(accountId: string, paymentId: string): Promise<PaymentView> {
    const payment = await this.statusCache.get(paymentId);
    if (payment === undefined || payment.accountId !== accountId) {
      throw new GatewayError('PAYMENT_NOT_FOUND', { message: `No payment ${paymentId}.` });
    }
    const asset = assetOfPayment(this.networks, payment);
    const view = paymentView(payment, asset, await this.currentHeight(payment.network));
    // Refunds change while the payment stays as it is (a final one is cached for good): read each time.
    if (payment.direction === 'received' && payment.refundOf === undefined) {
      const refunds = await this.store.payments.refundsOf(payment.id);
      view.refunds = refundsView(payment, refunds, asset.decimals, this.networks.get(payment.network));
    }
    return view;
  }

  async history(
    accountId: string,
    query: { walletAddress: string; type: 'sent' | 'received' | 'all'; limit: number; offset: number },
  ): Promise<HistoryPage> {
    const ownership = this.ownership(accountId, query.walletAddress);
    const page = await this.readPage(accountId, query);
    // A local-mode payer signs with its own key, so it need not be a wallet of the account; the
    // account's own payments from it are shown all the same. Anything else stays 403.
    const notOwned = await ownership;
    if (notOwned !== undefined && page.total === 0) throw notOwned;
    return page;
  }

  /**
   * The same page as `history`, as the JSON text `render` makes of it, from memory while the wallet's
   * history version is unchanged (HistoryPageCache): what storage holds now, on any instance. The
   * wallet's ownership is checked on every call, as `history` checks it.
   */
  async renderedHistory(
    accountId: string,
    query: { walletAddress: string; type: 'sent' | 'received' | 'all'; limit: number; offset: number },
    render: (page: HistoryPage) => string,
  ): Promise<RenderedPage> {
    if (addressFamily(query.walletAddress) === undefined) {
      return { body: Buffer.from(render(await this.history(accountId, query))), etag: '' };
    }
    const ownership = this.ownership(accountId, query.walletAddress);
    const key = `${accountId} ${query.type} ${query.limit} ${query.offset} ${query.walletAddress}`;
    const kept = this.pages.get(key);
    const token = this.store.changeToken();
    // Read before the page, so an unchanged version proves the page kept under it current (see
    // HistoryPageCache): not concurrently with it. Not read at all while nothing was written since.
    const { total, version } =
      kept !== undefined && token !== undefined && kept.token === token
        ? kept
        : await this.store.payments.historyVersion(
            accountId,
            canonicalAddress(query.walletAddress),
            query.type === 'all' ? undefined : query.type,
          );
    // As `history`: 403 unless the wallet is the account's or the account has payments of it.
    const notOwned = await ownership;
    if (notOwned !== undefined && total === 0) throw notOwned;
    if (kept !== undefined && kept.version === version) {
      // The version and total stand under `token` only if nothing was written while they were read.
      if (token !== undefined && this.store.changeToken() === token) kept.token = token;
      return kept.page;
    }
    const page = await this.readPage(accountId, query);
    const unchanged = token !== undefined && this.store.changeToken() === token;
    return this.pages.keep(key, { version, total, token: unchanged ? token : undefined }, render(page));
  }

  /** The wallet's page as storage holds it, whoever owns the wallet (the callers check). */
  private async readPage(
    accountId: string,
    query: { walletAddress: string; type: 'sent' | 'received' | 'all'; limit: number; offset: number },
  ): Promise<HistoryPage> {
    // No payment is stored under text that is not an address, so it is not looked up (PostgreSQL
    // refuses a NUL in a query): the answer is the 403 of a wallet that is not the caller's.
    const { total, payments } =
      addressFamily(query.walletAddress) === undefined
        ? { total: 0, payments: [] }
        : await this.store.payments.history({
            accountId,
            // Payments are stored under the canonical spelling (EVM: checksummed), whatever case was asked.
            walletAddress: canonicalAddress(query.walletAddress),
            direction: query.type === 'all' ? undefined : query.type,
            limit: query.limit,
            offset: query.offset,
          });
    return {
      walletAddress: query.walletAddress,
      total,
      limit: query.limit,
      offset: query.offset,
      payments: payments.map((p) => this.entry(p)),
    };
  }

  /** Undefined when the wallet is the account's, else the 403 to answer (when nothing else shows). */
  private ownership(accountId: string, walletAddress: string): Promise<unknown> {
    return this.wallets.owned(accountId, walletAddress).then(
      () => undefined,
      (error: unknown) => error,
    );
  }

  /** The account's payments across its wallets, newest first, narrowed by any filter given (the dashboard). */
  async search(
    accountId: string,
    query: {
      walletAddress?: string | undefined;
      type?: PaymentDirection | undefined;
      status?: PaymentStatus | undefined;
      limit: number;
      offset: number;
    },
  ): Promise<{ total: number; limit: number; offset: number; payments: HistoryEntry[] }> {
    const { total, payments } = await this.store.payments.search({
      accountId,
      walletAddress: query.walletAddress === undefined ? undefined : canonicalAddress(query.walletAddress),
      direction: query.type,
      status: query.status,
      limit: query.limit,
      offset: query.offset,
    });
    return { total, limit: query.limit, offset: query.offset, payments: payments.map((p) => this.entry(p)) };
  }

  private entry(payment: PaymentSummary): HistoryEntry {
    const asset = assetOfPayment(this.networks, payment);
    const entry: HistoryEntry = {
      paymentId: payment.id,
      type: payment.refundOf === undefined ? payment.direction : 'refund',
      amount: toWholeUnits(payment.amount, asset.decimals),
      status: payment.status,
      timestamp: payment.createdAt,
      signature: payment.signature,
      network: payment.network,
      asset,
    };
    if (payment.direction === 'sent') entry.recipient = payment.recipient;
    else entry.sender = payment.sender;
    if (payment.resource !== null) entry.resource = payment.resource;
    if (payment.refundOf !== undefined) entry.refundOf = payment.refundOf;
    return entry;
  }

  /** The chain's height, shared by concurrent requests for a moment; undefined when unreachable. */
  private currentHeight(network: string): Promise<bigint | undefined> {
    const cached = this.heights.get(network);
    if (cached !== undefined && this.now() - cached.at < HEIGHT_TTL_MS) return cached.height;
    const chain = this.networks.get(network);
    const height =
      chain === undefined ? Promise.resolve(undefined) : chain.getBlockHeight().catch(() => undefined);
    this.heights.set(network, { at: this.now(), height });
    return height;
  }
}
