import { type Kysely, sql } from 'kysely';
import type { PaymentDirection } from '../../domain/payment-status.ts';
import type { Database } from '../database-schema.ts';
import type { AssetVolume, PaymentVolumeRepository, ResourceRevenue } from '../store.ts';
import { joinPieces } from './exact-sum.ts';
import { DAY_MS, VOLUME_PIECES } from './payment-volume-rollup.ts';

type Row = Record<string, unknown>;

/** The exact piece sums of a group, as text (a bigint sum read as a JavaScript number could round). */
const PIECE_SUMS = sql.join(
  Array.from({ length: VOLUME_PIECES }, (_, i) => sql.raw(`cast(sum(piece${i}) as text) as piece${i}`)),
);

/**
 * What an account's paid payments add up to (the dashboard's home), read from the `payment_volume`
 * rollup (migration 0028, kept by payment-volume-rollup.ts in every payment's transaction): a range of
 * one account's day rows instead of its payments. Ranges are whole UTC days: a day counts when its
 * start falls in [since, until) — GET /account/summary's window starts at a day's start and ends now,
 * so its last day is today, all of it.
 */
export class KyselyPaymentVolumeRepository implements PaymentVolumeRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async byDay(accountId: string, since: number, until: number): Promise<AssetVolume[]> {
    const rows = await sql<Row>`
      select day, flow, network, asset, asset_decimals, cast(sum(n) as text) as n, ${PIECE_SUMS}
      from payment_volume
      where account_id = ${accountId} and day >= ${firstDay(since)} and day < ${firstDay(until)}
        and flow in ('received', 'sent', 'refunded')
      group by day, flow, network, asset, asset_decimals
      order by day`.execute(this.db);
    return rows.rows
      .filter((row) => Number(row.n) > 0)
      .map((row) => ({
        day: Number(row.day) * DAY_MS,
        direction: row.flow === 'received' ? 'received' : ('sent' as PaymentDirection),
        refund: row.flow === 'refunded',
        network: row.network as string,
        asset: assetOf(row),
        count: Number(row.n),
        amount: joinPieces(row),
      }));
  }

  async topResources(
    accountId: string,
    since: number,
    until: number,
    perAsset: number,
  ): Promise<ResourceRevenue[]> {
    // Ranked within each asset (revenues in different assets do not compare) by the exact amount, ties
    // by the resource; the native currency (asset '') first.
    const revenues = await this.byResource(accountId, since, until, 'received');
    const byAsset = new Map<string, ResourceRevenue[]>();
    for (const revenue of revenues) {
      const key = `${revenue.network}\u0000${revenue.asset?.address ?? ''}`;
      const list = byAsset.get(key) ?? [];
      list.push(revenue);
      byAsset.set(key, list);
    }
    return [...byAsset.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap(([, list]) =>
        list
          .sort((a, b) =>
            a.amount === b.amount
              ? a.resource < b.resource
                ? -1
                : a.resource > b.resource
                  ? 1
                  : 0
              : a.amount > b.amount
                ? -1
                : 1,
          )
          .slice(0, perAsset),
      );
  }

  async refundsByResource(accountId: string, since: number, until: number): Promise<ResourceRevenue[]> {
    // Kept under the day and resource of the sale each refund refunds, whenever it was made, so a
    // resource's revenue and what was given back of it cover the same sales.
    return this.byResource(accountId, since, until, 'refunded_sale');
  }

  private async byResource(
    accountId: string,
    since: number,
    until: number,
    flow: 'received' | 'refunded_sale',
  ): Promise<ResourceRevenue[]> {
    const rows = await sql<Row>`
      select resource, network, asset, asset_decimals, cast(sum(n) as text) as n, ${PIECE_SUMS}
      from payment_volume
      where account_id = ${accountId} and day >= ${firstDay(since)} and day < ${firstDay(until)}
        and flow = ${flow} and resource <> ''
      group by resource, network, asset, asset_decimals`.execute(this.db);
    return rows.rows.filter((row) => Number(row.n) > 0).map(resourceRevenue);
  }
}

/** The first UTC day (days since 1970) whose start is at or after `at`. */
function firstDay(at: number): number {
  return Math.ceil(at / DAY_MS);
}

function resourceRevenue(row: Row): ResourceRevenue {
  return {
    resource: row.resource as string,
    network: row.network as string,
    asset: assetOf(row),
    count: Number(row.n),
    amount: joinPieces(row),
  };
}

function assetOf(row: Row): { address: string; decimals: number } | null {
  // The rollup keeps the native currency as asset '' (a key column cannot be null).
  return row.asset === null || row.asset === undefined || row.asset === ''
    ? null
    : { address: row.asset as string, decimals: Number(row.asset_decimals) };
}
