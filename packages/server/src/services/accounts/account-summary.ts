import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { atomicToDecimalText } from '../../domain/money.ts';
import type { PaymentDirection } from '../../domain/payment-status.ts';
import type { AssetVolume, ResourceRevenue, Store } from '../../store/store.ts';

const DAY_MS = 86_400_000;
/** The longest window the summary adds up: the dashboard's chart shows 30 days; a quarter at most. */
export const SUMMARY_MAX_DAYS = 90;
/** Resources ranked per asset. */
const TOP_RESOURCES = 10;

/** An amount as the API shows it: exact decimal text in whole units, and the atomic units it is. */
export interface ShownAmount {
  readonly amount: string;
  readonly atomic: string;
}

/** How an asset is named: its symbol where the network lists it (GET /networks), else null. */
export interface AssetName {
  readonly network: string;
  /** Mint or contract address; null: the network's native currency. */
  readonly asset: string | null;
  readonly symbol: string | null;
  readonly decimals: number;
}

/** Money in one direction: how much, and in how many payments. */
export type Flow = ShownAmount & { readonly count: number };

/**
 * Received: every paid payment in. Sent: paid payments out, refunds apart. Refunded: paid refunds,
 * money given back to the payers of received payments (so received − refunded is what was kept).
 */
export interface Flows {
  readonly received: Flow;
  readonly sent: Flow;
  readonly refunded: Flow;
}

export interface AssetTotals extends AssetName, Flows {}

export interface DayVolume extends AssetName, Flows {
  /** The UTC day, `YYYY-MM-DD`. */
  readonly date: string;
}

/** A resource's revenue: what its sales brought in, less what was refunded of them. */
export interface TopResource extends AssetName, ShownAmount {
  readonly resource: string;
  /** Paid sales. */
  readonly count: number;
  /** Refunded of those sales, whole units (exact decimal text); already taken off `amount`. */
  readonly refunded: string;
}

export interface AccountSummary {
  /** The window, Unix ms: from the start of the UTC day `days - 1` days ago to now. */
  readonly from: number;
  readonly to: number;
  readonly days: number;
  /** Totals per network and asset over the window. */
  readonly assets: AssetTotals[];
  /** Per UTC day and asset, only days with a paid payment, oldest first. */
  readonly daily: DayVolume[];
  /** The highest-earning resources of each asset, highest first. */
  readonly topResources: TopResource[];
}

/**
 * What an account's business looked like lately (the dashboard's home, GET /account/summary): paid
 * volume received and sent per UTC day and asset, totals, and the resources that earned most. Only
 * confirmed and finalized payments count; amounts are exact, in the asset's whole units with its
 * symbol. Only the caller's account is ever read.
 */
export class AccountSummaryService {
  private readonly now: () => number;

  constructor(private readonly deps: { store: Store; networks: NetworkRegistry; now?: () => number }) {
    this.now = deps.now ?? Date.now;
  }

  async summary(accountId: string, days: number): Promise<AccountSummary> {
    const to = this.now();
    const from = Math.floor(to / DAY_MS) * DAY_MS - (days - 1) * DAY_MS;
    // Ranked by what sales brought in, then net of refunds: twice as many asked for, so a resource
    // refunded away drops out of the ten rather than leaving a gap.
    const [volume, top, refunds] = await Promise.all([
      this.deps.store.paymentVolume.byDay(accountId, from, to + 1),
      this.deps.store.paymentVolume.topResources(accountId, from, to + 1, TOP_RESOURCES * 2),
      this.deps.store.paymentVolume.refundsByResource(accountId, from, to + 1),
    ]);
    return {
      from,
      to,
      days,
      assets: this.totals(volume),
      daily: this.daily(volume),
      topResources: this.topResources(top, refunds),
    };
  }

  private totals(volume: readonly AssetVolume[]): AssetTotals[] {
    const byAsset = new Map<string, { name: AssetName; sums: Sums }>();
    for (const row of volume) {
      const key = assetKey(row);
      let entry = byAsset.get(key);
      if (entry === undefined) {
        entry = { name: this.nameOf(row), sums: emptySums() };
        byAsset.set(key, entry);
      }
      add(entry.sums, row, row.amount, row.count);
    }
    return [...byAsset.values()]
      .map(({ name, sums }) => ({ ...name, ...shownSums(sums, name.decimals) }))
      .sort(byNetworkThenAsset);
  }

  private daily(volume: readonly AssetVolume[]): DayVolume[] {
    const byDay = new Map<string, { day: number; name: AssetName; sums: Sums }>();
    for (const row of volume) {
      const key = `${row.day}|${assetKey(row)}`;
      let entry = byDay.get(key);
      if (entry === undefined) {
        entry = { day: row.day, name: this.nameOf(row), sums: emptySums() };
        byDay.set(key, entry);
      }
      add(entry.sums, row, row.amount, row.count);
    }
    return [...byDay.values()]
      .sort((a, b) => a.day - b.day || byNetworkThenAsset(a.name, b.name))
      .map(({ day, name, sums }) => ({
        date: new Date(day).toISOString().slice(0, 10),
        ...name,
        ...shownSums(sums, name.decimals),
      }));
  }

  /** Each asset's highest earners net of refunds, highest first; ties by resource. */
  private topResources(
    sales: readonly ResourceRevenue[],
    refunds: readonly ResourceRevenue[],
  ): TopResource[] {
    const key = (r: ResourceRevenue) => `${assetKey(r)}|${r.resource}`;
    const refunded = new Map(refunds.map((r) => [key(r), r.amount]));
    const byAsset = new Map<string, { net: bigint; back: bigint; row: ResourceRevenue }[]>();
    for (const row of sales) {
      const back = refunded.get(key(row)) ?? 0n;
      const net = row.amount > back ? row.amount - back : 0n;
      const list = byAsset.get(assetKey(row)) ?? [];
      list.push({ net, back, row });
      byAsset.set(assetKey(row), list);
    }
    const shown: TopResource[] = [];
    for (const list of byAsset.values()) {
      list.sort((a, b) =>
        a.net === b.net ? (a.row.resource < b.row.resource ? -1 : 1) : a.net > b.net ? -1 : 1,
      );
      for (const { net, back, row } of list.slice(0, TOP_RESOURCES)) {
        const name = this.nameOf(row);
        shown.push({
          resource: row.resource,
          ...name,
          amount: atomicToDecimalText(net, name.decimals),
          atomic: net.toString(),
          count: row.count,
          refunded: atomicToDecimalText(back, name.decimals),
        });
      }
    }
    return shown;
  }

  /** The asset's symbol and decimals: the network's native currency, or a token it lists. */
  private nameOf(row: { network: string; asset: { address: string; decimals: number } | null }): AssetName {
    const network = this.deps.networks.get(row.network)?.info;
    if (row.asset === null) {
      return {
        network: row.network,
        asset: null,
        symbol: network?.nativeCurrency.symbol ?? null,
        decimals: network?.nativeCurrency.decimals ?? 0,
      };
    }
    const address = row.asset.address;
    const listed = this.deps.networks
      .tokensOf(row.network)
      .find((t) => t.address === address || t.address.toLowerCase() === address.toLowerCase());
    return {
      network: row.network,
      asset: address,
      symbol: listed?.symbol ?? null,
      decimals: row.asset.decimals,
    };
  }
}

type FlowName = keyof Flows;
type Sums = Record<FlowName, { amount: bigint; count: number }>;

function emptySums(): Sums {
  return {
    received: { amount: 0n, count: 0 },
    sent: { amount: 0n, count: 0 },
    refunded: { amount: 0n, count: 0 },
  };
}

/** Which flow a payment is in: received, a refund given back, or sent. */
function flowOf(row: { direction: PaymentDirection; refund: boolean }): FlowName {
  return row.direction === 'received' ? 'received' : row.refund ? 'refunded' : 'sent';
}

function add(
  sums: Sums,
  row: { direction: PaymentDirection; refund: boolean },
  amount: bigint,
  count: number,
): void {
  const flow = sums[flowOf(row)];
  flow.amount += amount;
  flow.count += count;
}

function shownSums(sums: Sums, decimals: number): Flows {
  const shown = (flow: { amount: bigint; count: number }): Flow => ({
    amount: atomicToDecimalText(flow.amount, decimals),
    atomic: flow.amount.toString(),
    count: flow.count,
  });
  return { received: shown(sums.received), sent: shown(sums.sent), refunded: shown(sums.refunded) };
}

function assetKey(row: { network: string; asset: { address: string } | null }): string {
  return `${row.network}|${row.asset?.address ?? ''}`;
}

/** The native currency first within a network, then tokens by address. */
function byNetworkThenAsset(a: AssetName, b: AssetName): number {
  if (a.network !== b.network) return a.network < b.network ? -1 : 1;
  if (a.asset === b.asset) return 0;
  if (a.asset === null) return -1;
  if (b.asset === null) return 1;
  return a.asset < b.asset ? -1 : 1;
}
