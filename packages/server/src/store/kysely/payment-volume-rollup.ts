import { type Kysely, sql } from 'kysely';
import type { Database } from '../database-schema.ts';
import { compiledOnce } from './compiled-query.ts';

/**
 * Keeps `payment_volume` (migration 0028) equal to what the payments table adds up to: the payment
 * repository calls `countVolume` with a payment's row before and after every insert and state change,
 * in the same transaction, so the rollup commits or rolls back with the payment.
 *
 * Invariant: for every key, `n` and the pieces are the count and the piece sums of the paid payments
 * (confirmed or finalized) the key covers (see the migration for the flows). A change adds the new row's
 * contribution and takes off the old one's; both are empty for a payment that is not paid, so a
 * payment moving between unpaid states writes nothing here.
 */

/** The columns of a payments row that decide its contribution. */
export interface VolumeRow {
  readonly account_id: string;
  readonly direction: string;
  readonly status: string;
  readonly network: string;
  readonly asset: string | null;
  readonly asset_decimals: number | string | null;
  readonly resource: string | null;
  readonly created_at: number | string;
  readonly refund_of: string | null;
  readonly amount: string;
}

export const DAY_MS = 86_400_000;
const PIECE_DIGITS = 9;
export const VOLUME_PIECES = 9;

export type VolumeFlow = 'received' | 'sent' | 'refunded' | 'refunded_sale';

export function isPaid(status: string): boolean {
  return status === 'confirmed' || status === 'finalized';
}

/** The paid-or-not of the states a transition may start from; 'mixed' when they differ. */
export function paidness(statuses: readonly string[]): boolean | 'mixed' {
  const paid = statuses.filter(isPaid).length;
  return paid === 0 ? false : paid === statuses.length ? true : 'mixed';
}

/**
 * Adds (`sign` 1) or takes off (-1) what `row` counts for in the rollup: nothing unless it is paid. A
 * refund's sale is read here (its day and resource), in the caller's transaction.
 */
export async function countVolume(db: Kysely<Database>, row: VolumeRow, sign: 1 | -1): Promise<void> {
  if (!isPaid(row.status)) return;
  const day = Math.floor(Number(row.created_at) / DAY_MS);
  if (row.direction === 'received') {
    await addVolume(db, row, 'received', day, row.resource ?? '', sign);
    return;
  }
  if (row.refund_of === null) {
    await addVolume(db, row, 'sent', day, '', sign);
    return;
  }
  await addVolume(db, row, 'refunded', day, '', sign);
  const sale = await sql<{ account_id: string; created_at: number | string; resource: string | null }>`
    select account_id, created_at, resource from payments where id = ${row.refund_of}`.execute(db);
  const of = sale.rows[0];
  if (of !== undefined && of.account_id === row.account_id && of.resource !== null) {
    await addVolume(db, row, 'refunded_sale', Math.floor(Number(of.created_at) / DAY_MS), of.resource, sign);
  }
}

/** The upsert of one key's delta, compiled once: account, day, flow, network, asset, decimals, resource, n, pieces. */
const addVolumeQuery = compiledOnce((db: Kysely<Database>) => {
  const names = sql.join(Array.from({ length: VOLUME_PIECES }, (_, i) => sql.ref(`piece${i}`)));
  const placeholders = sql.join(Array.from({ length: VOLUME_PIECES }, () => 0));
  const sums = sql.join(
    Array.from({ length: VOLUME_PIECES }, (_, i) =>
      sql.raw(`piece${i} = payment_volume.piece${i} + excluded.piece${i}`),
    ),
  );
  // One statement either way: the first payment of a key inserts its row, later ones add to it (on
  // PostgreSQL the conflict takes the row's lock, so concurrent transactions add one after the other).
  return sql`
    insert into payment_volume (account_id, day, flow, network, asset, asset_decimals, resource, n, ${names})
    values (${''}, ${0}, ${''}, ${''}, ${''}, ${0}, ${''}, ${0}, ${placeholders})
    on conflict (account_id, day, flow, network, asset, asset_decimals, resource)
    do update set n = payment_volume.n + excluded.n, ${sums}`.compile(db);
});

async function addVolume(
  db: Kysely<Database>,
  row: VolumeRow,
  flow: VolumeFlow,
  day: number,
  resource: string,
  sign: 1 | -1,
): Promise<void> {
  const decimals = row.asset_decimals === null ? -1 : Number(row.asset_decimals);
  // No -0: a zero piece stays the integer 0.
  const pieces = amountPieces(row.amount).map((piece) => (piece === 0 ? 0 : sign * piece));
  await addVolumeQuery(
    db,
    row.account_id,
    day,
    flow,
    row.network,
    row.asset ?? '',
    decimals,
    resource,
    sign,
    ...pieces,
  );
}

/** An amount (decimal text of atomic units) as its 9-digit pieces, lowest first. */
export function amountPieces(amount: string): number[] {
  if (!/^[0-9]{1,81}$/.test(amount)) {
    // Every amount is at most a uint256 (78 digits): anything else is not a payment's amount.
    throw new Error(`payment_volume: not an amount of at most 81 digits: ${amount.slice(0, 100)}`);
  }
  const pieces: number[] = [];
  for (let end = amount.length, i = 0; i < VOLUME_PIECES; i++, end -= PIECE_DIGITS) {
    pieces.push(end <= 0 ? 0 : Number(amount.slice(Math.max(0, end - PIECE_DIGITS), end)));
  }
  return pieces;
}
