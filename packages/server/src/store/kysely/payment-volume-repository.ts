import { type Kysely, sql } from 'kysely';
import type { PaymentDirection } from '../../domain/payment-status.ts';
import type { Database } from '../database-schema.ts';
import type { AssetVolume, PaymentVolumeRepository, ResourceRevenue } from '../store.ts';
import { joinPieces, PIECE_NAMES, sumPieces } from './exact-sum.ts';

/** Payments that moved money: what volume counts. A reorged-out payment is `reverted` and drops out. */
const PAID = ['confirmed', 'finalized'] as const;

const DAY_MS = 86_400_000;

/**
 * What an account's payments add up to (the dashboard's home): by UTC day and asset, and by resource.
 * Read over the `payments_account_created` index, a range of one account's rows; amounts summed exactly
 * (exact-sum.ts).
 */
export class KyselyPaymentVolumeRepository implements PaymentVolumeRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async byDay(accountId: string, since: number, until: number): Promise<AssetVolume[]> {
    const pieces = sumPieces('amount').map((piece, i) => sql`${piece} as ${sql.ref(PIECE_NAMES[i] ?? '')}`);
    const { rows } = await sql<Record<string, unknown>>`
      select cast(created_at / ${sql.lit(DAY_MS)} as bigint) as day, direction, network, asset,
        asset_decimals, count(*) as n, ${sql.join(pieces)}
      from payments
      where account_id = ${accountId} and created_at >= ${since} and created_at < ${until}
        and status in (${sql.join(PAID)})
      group by cast(created_at / ${sql.lit(DAY_MS)} as bigint), direction, network, asset, asset_decimals
      order by day`.execute(this.db);
    return rows.map((row) => ({
      day: Number(row.day) * DAY_MS,
      direction: row.direction as PaymentDirection,
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
    const pieces = sumPieces('amount').map((piece, i) => sql`${piece} as ${sql.ref(PIECE_NAMES[i] ?? '')}`);
    // Ranked within each asset (revenues in different assets do not compare) by an approximate sum;
    // the amounts answered are the exact ones. A tie on the approximation is broken by the resource.
    // The native currency (a null asset) first on both databases, which sort nulls differently.
    const { rows } = await sql<Record<string, unknown>>`
      select * from (
        select resource, network, asset, asset_decimals, count(*) as n, ${sql.join(pieces)},
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
      order by network, asset is not null, asset, rank`.execute(this.db);
    return rows.map((row) => ({
      resource: row.resource as string,
      network: row.network as string,
      asset: assetOf(row),
      count: Number(row.n),
      amount: joinPieces(row),
    }));
  }
}

function assetOf(row: Record<string, unknown>): { address: string; decimals: number } | null {
  return row.asset === null || row.asset === undefined
    ? null
    : { address: row.asset as string, decimals: Number(row.asset_decimals) };
}
