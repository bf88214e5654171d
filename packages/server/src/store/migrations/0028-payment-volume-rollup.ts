import { type Kysely, type Migration, type RawBuilder, SqliteAdapter, sql } from 'kysely';

/** Digits per stored piece of an amount, and pieces per amount: 9 × 9 = 81 digits hold any uint256. */
const PIECE_DIGITS = 9;
const PIECES = 9;
const DAY_MS = 86_400_000;
const PAID = sql`('confirmed', 'finalized')`;

/**
 * `payment_volume`: what an account's paid payments (confirmed or finalized) add up to, per UTC day of
 * their creation, flow, network, asset and resource — the dashboard home (GET /account/summary) reads
 * this instead of summing up to a quarter's payments on every load (~170 ms at 100,000 payments).
 *
 * Kept exactly equal to the payments table by the payment repository, in the transaction of every
 * insert and state change (store/kysely/payment-volume-rollup.ts): a payment counts while it is paid,
 * and stops counting when it leaves that (confirmed → reverted). Flows:
 * - `received`: paid received payments, under their resource ('' when none);
 * - `sent`: paid sent payments that are not refunds;
 * - `refunded`: paid refunds, on the refund's own day;
 * - `refunded_sale`: the same refunds again, on the day and under the resource of the sale they refund
 *   (only sales of the same account that have a resource): what each resource's revenue loses.
 *
 * Amounts are decimal text up to uint256, which neither database adds exactly as one integer, so each is
 * kept as nine 9-digit pieces (`piece0` lowest), each summed as a bigint, put together in JavaScript. A
 * native-currency payment has asset '' and decimals -1 (primary key columns cannot be null).
 *
 * The backfill below is the same definition in SQL, over the payments stored before this migration.
 */
export const paymentVolumeRollup: Migration = {
  async up(db: Kysely<unknown>) {
    let table = db.schema
      .createTable('payment_volume')
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('day', 'bigint', (c) => c.notNull())
      .addColumn('flow', 'text', (c) => c.notNull())
      .addColumn('network', 'text', (c) => c.notNull())
      .addColumn('asset', 'text', (c) => c.notNull())
      .addColumn('asset_decimals', 'integer', (c) => c.notNull())
      .addColumn('resource', 'text', (c) => c.notNull())
      .addColumn('n', 'bigint', (c) => c.notNull());
    for (let i = 0; i < PIECES; i++) table = table.addColumn(`piece${i}`, 'bigint', (c) => c.notNull());
    // On SQLite the rows live in the primary key's b-tree itself (WITHOUT ROWID): a payment's commit
    // writes one b-tree page for the rollup instead of a table page and its key's index page.
    if (db.getExecutor().adapter instanceof SqliteAdapter) table = table.modifyEnd(sql`without rowid`);
    await table
      .addPrimaryKeyConstraint('payment_volume_pk', [
        'account_id',
        'day',
        'flow',
        'network',
        'asset',
        'asset_decimals',
        'resource',
      ])
      .execute();

    const pieces = (column: string) => sql.join(pieceSums(column));
    const pieceNames = sql.join(Array.from({ length: PIECES }, (_, i) => sql.ref(`piece${i}`)));
    const day = (column: string) => sql`cast(${sql.ref(column)} / ${sql.lit(DAY_MS)} as bigint)`;
    await sql`
      insert into payment_volume (account_id, day, flow, network, asset, asset_decimals, resource, n, ${pieceNames})
      select account_id, ${day('created_at')},
        case when direction = 'received' then 'received' when refund_of is null then 'sent' else 'refunded' end,
        network, coalesce(asset, ''), coalesce(asset_decimals, -1),
        case when direction = 'received' then coalesce(resource, '') else '' end,
        count(*), ${pieces('amount')}
      from payments
      where status in ${PAID}
      group by account_id, ${day('created_at')},
        case when direction = 'received' then 'received' when refund_of is null then 'sent' else 'refunded' end,
        network, coalesce(asset, ''), coalesce(asset_decimals, -1),
        case when direction = 'received' then coalesce(resource, '') else '' end`.execute(db);
    await sql`
      insert into payment_volume (account_id, day, flow, network, asset, asset_decimals, resource, n, ${pieceNames})
      select refund.account_id, ${day('sale.created_at')}, 'refunded_sale', refund.network,
        coalesce(refund.asset, ''), coalesce(refund.asset_decimals, -1), sale.resource,
        count(*), ${pieces('refund.amount')}
      from payments refund
      join payments sale on sale.id = refund.refund_of
      where refund.refund_of is not null and refund.status in ${PAID}
        and sale.account_id = refund.account_id and sale.resource is not null
      group by refund.account_id, ${day('sale.created_at')}, refund.network,
        coalesce(refund.asset, ''), coalesce(refund.asset_decimals, -1), sale.resource`.execute(db);
  },
};

/** `sum` of each 9-digit piece of a decimal text column, lowest first (as store/kysely/exact-sum.ts). */
function pieceSums(column: string): RawBuilder<unknown>[] {
  const value = sql.ref(column);
  return Array.from({ length: PIECES }, (_, i) => {
    const low = PIECE_DIGITS * i;
    const high = low + PIECE_DIGITS;
    return sql`sum(case
      when length(${value}) <= ${sql.lit(low)} then 0
      when length(${value}) <= ${sql.lit(high)} then cast(substr(${value}, 1, length(${value}) - ${sql.lit(low)}) as bigint)
      else cast(substr(${value}, length(${value}) - ${sql.lit(high - 1)}, ${sql.lit(PIECE_DIGITS)}) as bigint)
    end)`;
  });
}
