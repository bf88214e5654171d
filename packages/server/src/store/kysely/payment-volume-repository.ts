import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { PaymentDirection } from '../../domain/payment-status.ts';
import type { Database } from '../database-schema.ts';
import type { AssetVolume, PaymentVolumeRepository, ResourceRevenue } from '../store.ts';
import { FEW_PIECES, joinPieces, longestOf, needsMorePieces, piecesFor, sumPieces } from './exact-sum.ts';

/** Payments that moved money: what volume counts. A reorged-out payment is `reverted` and drops out. */
const PAID = ['confirmed', 'finalized'] as const;

const DAY_MS = 86_400_000;

type Row = Record<string, unknown>;

/**
 * What an account's payments add up to (the dashboard's home): by UTC day and asset, and by resource.
 * Read over the `payments_account_created` index, a range of one account's rows; amounts summed exactly
 * (exact-sum.ts), with as few pieces as the amounts read need.
 */
export class KyselyPaymentVolumeRepository implements PaymentVolumeRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async byDay(accountId: string, since: number, until: number): Promise<AssetVolume[]> {
    const rows = await this.summed(
      'amount',
      (sums) => sql<Row>`
      select cast(created_at / ${sql.lit(DAY_MS)} as bigint) as day, direction,
        case when refund_of is null then 0 else 1 end as refund, network, asset, asset_decimals,
        count(*) as n, ${sums}
      from payments
      where account_id = ${accountId} and created_at >= ${since} and created_at < ${until}
        and status in (${sql.join(PAID)})
      group by cast(created_at / ${sql.lit(DAY_MS)} as bigint), direction,
        case when refund_of is null then 0 else 1 end, network, asset, asset_decimals
      order by day`,
    );
    return rows.map((row) => ({
      day: Number(row.day) * DAY_MS,
      direction: row.direction as PaymentDirection,
      refund: Number(row.refund) === 1,
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
    // Ranked within each asset (revenues in different assets do not compare) by an approximate sum;
    // the amounts answered are the exact ones. A tie on the approximation is broken by the resource.
    // The native currency (a null asset) first on both databases, which sort nulls differently.
    const rows = await this.summed(
      'amount',
      (sums) => sql<Row>`
      select * from (
        select resource, network, asset, asset_decimals, count(*) as n, ${sums},
          row_number() over (
            partition by network, asset
            order by sum(cast(amount as double precision)) desc, resource
          ) as rank
        from payments
        where account_id = ${accountId} and created_at >= ${since} and created_at < ${until}
          and status in (${sql.join(PAID)}) and direction = 'received' and resource is not null
        group by resource, network, asset, asset_decimals
      ) ranked
      where rank <= ${perAsset}
      order by network, asset is not null, asset, rank`,
    );
    return rows.map(resourceRevenue);
  }

  async refundsByResource(accountId: string, since: number, until: number): Promise<ResourceRevenue[]> {
    // Refunds are found by the sale they refund (its resource, made in the range), whenever they were
    // made, so a resource's revenue and what was given back of it cover the same sales. Read from the
    // refunds' own (partial) index: an account's refunds are few beside its payments.
    const rows = await this.summed(
      'refund.amount',
      (sums) => sql<Row>`
      select sale.resource as resource, refund.network as network, refund.asset as asset,
        refund.asset_decimals as asset_decimals, count(*) as n, ${sums}
      from payments refund
      join payments sale on sale.id = refund.refund_of
      where refund.refund_of is not null and refund.account_id = ${accountId}
        and refund.status in (${sql.join(PAID)})
        and sale.account_id = ${accountId} and sale.created_at >= ${since} and sale.created_at < ${until}
        and sale.resource is not null
      group by sale.resource, refund.network, refund.asset, refund.asset_decimals`,
    );
    return rows.map(resourceRevenue);
  }

  /**
   * Runs `query` with the exact sum of `column` in pieces: first with few (amounts below 10^18), again
   * with as many as the longest amount read needs when one was longer.
   */
  private async summed(
    column: string,
    query: (sums: RawBuilder<unknown>) => RawBuilder<Row>,
  ): Promise<Row[]> {
    const run = async (count: number) => {
      const sums = sql.join([...sumPieces(column, count), longestOf(column)]);
      return (await query(sums).execute(this.db)).rows;
    };
    const rows = await run(FEW_PIECES);
    const longest = Math.max(0, ...rows.map((row) => Number(row.longest ?? 0)));
    return rows.some((row) => needsMorePieces(row, FEW_PIECES)) ? run(piecesFor(longest)) : rows;
  }
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
  return row.asset === null || row.asset === undefined
    ? null
    : { address: row.asset as string, decimals: Number(row.asset_decimals) };
}
