import {
  expressionBuilder,
  type Insertable,
  type Kysely,
  PostgresAdapter,
  type Selectable,
  sql,
  type Updateable,
} from 'kysely';
import {
  canMove,
  type PaymentDirection,
  type PaymentMode,
  type PaymentStatus,
} from '../../domain/payment-status.ts';
import type {
  PaymentChanges,
  PaymentRecord,
  PaymentSummary,
  RefundSummary,
} from '../../domain/records/payment-records.ts';
import { tracer } from '../../telemetry/tracing.ts';
import type { Database, PaymentCountsTable, PaymentsTable } from '../database-schema.ts';
import type { ExportedPayment, ExportPageQuery } from '../payment-export.ts';
import type {
  HistoryQuery,
  HistoryVersion,
  PaymentLease,
  PaymentRepository,
  PaymentSearch,
  UnsettledSpend,
} from '../store.ts';
import { compiledInsertOnce, compiledOnce } from './compiled-query.ts';
import { leaseRows } from './lease-rows.ts';
import { exportPage } from './payment-export-query.ts';
import { countVolume, isPaid, paidness } from './payment-volume-rollup.ts';

/** Every payment's wallet count moves with it: +1, or a first row of 1. */
export const insertPaymentCount = compiledInsertOnce(
  ['account_id', 'wallet_address', 'direction', 'n'] satisfies (keyof Insertable<PaymentCountsTable>)[],
  (db: Kysely<Database>, row: Insertable<PaymentCountsTable>) =>
    db
      .insertInto('payment_counts')
      .values(row)
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'wallet_address', 'direction'])
          .doUpdateSet((eb) => ({ n: eb('payment_counts.n', '+', 1) })),
      )
      .compile(),
);

/** Every column a payment is inserted with, in the order the compiled INSERT binds them. */
const PAYMENT_COLUMNS = [
  'id',
  'account_id',
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
  'metadata',
  'signature',
  'reference',
  'signed_transaction',
  'last_valid_block_height',
  'expires_at',
  'slot',
  'block_height',
  'error',
  'source_payment_id',
  'idempotency_key',
  'lease_owner',
  'lease_until',
  'created_at',
  'updated_at',
  'confirmed_at',
  'nonce',
  'replaced_signatures',
  'asset',
  'asset_decimals',
  'refund_of',
  'refund_reason',
] as const satisfies readonly (keyof PaymentsTable)[];

const insertPaymentRow = compiledInsertOnce(PAYMENT_COLUMNS, (db: Kysely<Database>, row: PaymentRow) =>
  db.insertInto('payments').values(row).compile(),
);

/** A payments row: every column, so one compiled INSERT serves every payment. */
type PaymentRow = Required<Pick<Insertable<PaymentsTable>, (typeof PAYMENT_COLUMNS)[number]>>;

function paymentRow(payment: PaymentRecord, lease: PaymentLease | undefined): PaymentRow {
  return {
    id: payment.id,
    account_id: payment.accountId,
    direction: payment.direction,
    mode: payment.mode,
    status: payment.status,
    network: payment.network,
    wallet_address: payment.walletAddress,
    sender: payment.sender,
    recipient: payment.recipient,
    amount: payment.amount.toString(),
    fee: payment.fee?.toString() ?? null,
    resource: payment.resource,
    metadata: payment.metadata === null ? null : JSON.stringify(payment.metadata),
    signature: payment.signature,
    reference: payment.reference,
    signed_transaction: payment.signedTransaction,
    last_valid_block_height: toNumber(payment.lastValidBlockHeight),
    expires_at: payment.expiresAt,
    slot: toNumber(payment.slot),
    block_height: toNumber(payment.blockHeight),
    error: payment.error,
    source_payment_id: payment.sourcePaymentId,
    idempotency_key: payment.idempotencyKey,
    lease_owner: lease?.owner ?? null,
    lease_until: lease?.until ?? null,
    created_at: payment.createdAt,
    updated_at: payment.updatedAt,
    confirmed_at: payment.confirmedAt,
    nonce: toNumber(payment.nonce ?? null),
    replaced_signatures: signatureList(payment.replacedSignatures),
    asset: payment.asset?.address ?? null,
    asset_decimals: payment.asset?.decimals ?? null,
    refund_of: payment.refundOf ?? null,
    refund_reason: payment.refundReason ?? null,
  };
}

/** The columns of a PaymentSummary (history and search pages). */
const SUMMARY_COLUMNS = [
  'id',
  'direction',
  'status',
  'network',
  'sender',
  'recipient',
  'amount',
  'resource',
  'signature',
  'created_at',
  'asset',
  'asset_decimals',
  'refund_of',
] as const satisfies readonly (keyof PaymentsTable)[];

type SummaryRow = Pick<Selectable<PaymentsTable>, (typeof SUMMARY_COLUMNS)[number]>;

function toSummary(row: SummaryRow): PaymentSummary {
  return {
    id: row.id,
    direction: row.direction as PaymentDirection,
    status: row.status as PaymentStatus,
    network: row.network,
    sender: row.sender,
    recipient: row.recipient,
    amount: BigInt(row.amount),
    resource: row.resource,
    signature: row.signature,
    createdAt: Number(row.created_at),
    ...(row.asset === null || row.asset_decimals === null
      ? {}
      : { asset: { address: row.asset, decimals: Number(row.asset_decimals) } }),
    ...(row.refund_of === null ? {} : { refundOf: row.refund_of }),
  };
}

// A wallet's history, one page and its total, with or without a direction: each shape compiled once.
// Parameters bind in the order written: account, wallet, [direction], limit, offset.
const historyPage = (db: Kysely<Database>, byDirection: boolean) => {
  let page = db.selectFrom('payments').where('account_id', '=', '').where('wallet_address', '=', '');
  if (byDirection) page = page.where('direction', '=', '');
  return page
    .select(SUMMARY_COLUMNS)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(0)
    .offset(0)
    .compile();
};
const historyCount = (db: Kysely<Database>, byDirection: boolean) => {
  let counts = db.selectFrom('payment_counts').where('account_id', '=', '').where('wallet_address', '=', '');
  if (byDirection) counts = counts.where('direction', '=', '');
  return counts.select((eb) => eb.fn.sum<number | string | null>('n').as('n')).compile();
};
const historyPageQuery = compiledOnce((db: Kysely<Database>) => historyPage(db, false));
/** A wallet's count rows, one per direction: its totals and the version of its history (migration 0033). */
const historyVersionQuery = compiledOnce((db: Kysely<Database>) =>
  db
    .selectFrom('payment_counts')
    .select(['direction', 'n', 'changes'])
    .where('account_id', '=', '')
    .where('wallet_address', '=', '')
    .compile(),
);
/** A change to what history shows of a payment after its insert, in that change's transaction. */
const historyChangedQuery = compiledOnce((db: Kysely<Database>) =>
  db
    .updateTable('payment_counts')
    // A literal, not a bound 1: the parameters bound are the key's alone.
    .set({ changes: sql<number>`changes + 1` })
    .where('account_id', '=', '')
    .where('wallet_address', '=', '')
    .where('direction', '=', '')
    .compile(),
);
const historyPageOfDirectionQuery = compiledOnce((db: Kysely<Database>) => historyPage(db, true));
const historyCountQuery = compiledOnce((db: Kysely<Database>) => historyCount(db, false));
const historyCountOfDirectionQuery = compiledOnce((db: Kysely<Database>) => historyCount(db, true));

/** Status lookups run this for every request. */
const getPaymentQuery = compiledOnce((db: Kysely<Database>) =>
  db.selectFrom('payments').selectAll().where('id', '=', '').compile(),
);

// Every receive sent with an Idempotency-Key (the SDK always sends one) looks its key up first: built
// and compiled per call it cost 21–28 µs of event-loop CPU, compiled once 7.5–10.5 µs (#31).
const findByIdempotencyKeyQuery = compiledOnce((db: Kysely<Database>) =>
  db
    .selectFrom('payments')
    .selectAll()
    .where('account_id', '=', '')
    .where('idempotency_key', '=', '')
    .compile(),
);

export class KyselyPaymentRepository implements PaymentRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** The payment and its wallet's running count change together: in the caller's transaction, or in one of their own. */
  async insert(payment: PaymentRecord, lease?: PaymentLease): Promise<void> {
    if (!this.db.isTransaction) {
      await this.db.transaction().execute((trx) => new KyselyPaymentRepository(trx).insert(payment, lease));
      return;
    }
    tracer().notePayment(payment.id);
    await insertPaymentCount(this.db, {
      account_id: payment.accountId,
      wallet_address: payment.walletAddress,
      direction: payment.direction,
      n: 1,
    });
    const row = paymentRow(payment, lease);
    await insertPaymentRow(this.db, row);
    await countVolume(this.db, row, 1);
  }

  async get(id: string): Promise<PaymentRecord | undefined> {
    const [row] = await getPaymentQuery(this.db, id);
    return row && toPayment(row);
  }

  async findByIdempotencyKey(accountId: string, key: string): Promise<PaymentRecord | undefined> {
    // At most one row: the key is unique per account (payments_idempotency).
    const [row] = await findByIdempotencyKeyQuery(this.db, accountId, key);
    return row && toPayment(row);
  }

  async transition(
    id: string,
    from: readonly PaymentStatus[],
    status: PaymentStatus,
    changes: PaymentChanges,
    at: number,
  ): Promise<PaymentRecord | undefined> {
    tracer().notePayment(id);
    // Only moves the state machine allows: a payment in a final state is never written again, which is
    // what lets status keep final payments in memory on every instance (PaymentStatusCache).
    const allowed = from.filter((before) => canMove(before, status));
    if (allowed.length === 0) return undefined;
    // The paid volume (payment_volume) moves in the same transaction as the payment.
    if (!this.db.isTransaction) {
      return this.db
        .transaction()
        .execute((trx) => new KyselyPaymentRepository(trx).transition(id, allowed, status, changes, at));
    }
    const update = (before: readonly PaymentStatus[]) =>
      this.db
        .updateTable('payments')
        .set({ ...columns(changes), status, updated_at: at })
        .where('id', '=', id)
        .where('status', 'in', before)
        .returningAll()
        .executeTakeFirst();
    // What the payment counted for before: the same row with its old status (and amount, when this
    // changes it). Which old status, the UPDATE tells: when the states it may leave are some paid and
    // some not (→ finalized), the paid ones are tried first, each attempt atomic on the row.
    let row: Selectable<PaymentsTable> | undefined;
    let wasPaid: boolean;
    const paid = paidness(allowed);
    // A new amount on a payment that may already be paid: the old amount is taken off, so it is read
    // first, the row locked until commit on PostgreSQL (SQLite has one writer, which holds it already).
    const oldAmount =
      changes.amount === undefined || paid === false ? undefined : await this.amountLocked(id);
    if (paid === 'mixed') {
      row = await update(allowed.filter(isPaid));
      wasPaid = row !== undefined;
      row ??= await update(allowed.filter((before) => !isPaid(before)));
    } else {
      wasPaid = paid;
      row = await update(allowed);
    }
    if (row === undefined) return undefined;
    await this.recount(row, wasPaid, changes, oldAmount);
    // Last, so that on PostgreSQL the wallet's count row is locked only from here to the commit.
    await historyChanged(this.db, row);
    return toPayment(row);
  }

  private async amountLocked(id: string): Promise<string | undefined> {
    const lock = this.db.getExecutor().adapter instanceof PostgresAdapter ? sql` for update` : sql``;
    const rows = await sql<{ amount: string }>`select amount from payments where id = ${id}${lock}`.execute(
      this.db,
    );
    return rows.rows[0]?.amount;
  }

  /**
   * Moves the paid volume from what the row counted for before an update to what it counts for now.
   * The old row is the new one with the old paid-ness (any paid status counts alike) and, when the
   * update set a new amount, the old amount, which the caller read (`oldAmount`).
   */
  private async recount(
    row: Selectable<PaymentsTable>,
    wasPaid: boolean,
    changes: PaymentChanges,
    oldAmount?: string,
  ): Promise<void> {
    const isNowPaid = isPaid(row.status);
    const amountChanged = changes.amount !== undefined && oldAmount !== row.amount;
    if (wasPaid === isNowPaid && !(isNowPaid && amountChanged)) return;
    if (wasPaid) {
      if (changes.amount !== undefined && oldAmount === undefined) {
        // An amount set on a payment that was already paid: the state machine has no such move (upto
        // records its settled amount when it confirms), and the rollup could not take off the old one.
        throw new Error(`payment ${row.id}: its amount cannot change once it is paid`);
      }
      await countVolume(this.db, { ...row, status: 'confirmed', amount: oldAmount ?? row.amount }, -1);
    }
    await countVolume(this.db, row, 1);
  }

  async replaceTransaction(
    id: string,
    currentSignature: string,
    changes: PaymentChanges,
    at: number,
  ): Promise<PaymentRecord | undefined> {
    // History shows the signature: its version moves in the same transaction.
    if (!this.db.isTransaction) {
      return this.db
        .transaction()
        .execute((trx) =>
          new KyselyPaymentRepository(trx).replaceTransaction(id, currentSignature, changes, at),
        );
    }
    const row = await this.db
      .updateTable('payments')
      .set({ ...columns(changes), updated_at: at })
      .where('id', '=', id)
      .where('signature', '=', currentSignature)
      .where('status', 'in', ['pending', 'submitted'])
      .returningAll()
      .executeTakeFirst();
    if (row === undefined) return undefined;
    await historyChanged(this.db, row);
    return toPayment(row);
  }

  async relocate(id: string, changes: PaymentChanges, at: number): Promise<PaymentRecord | undefined> {
    // A confirmed payment is paid: changing its amount would have to move the paid volume too.
    if (changes.amount !== undefined) throw new Error('relocate does not change an amount');
    // A new signature shows in history: its version then moves in the same transaction.
    if (changes.signature !== undefined && !this.db.isTransaction) {
      return this.db
        .transaction()
        .execute((trx) => new KyselyPaymentRepository(trx).relocate(id, changes, at));
    }
    const row = await this.db
      .updateTable('payments')
      .set({ ...columns(changes), updated_at: at })
      .where('id', '=', id)
      .where('status', '=', 'confirmed')
      .returningAll()
      .executeTakeFirst();
    if (row === undefined) return undefined;
    if (changes.signature !== undefined) await historyChanged(this.db, row);
    return toPayment(row);
  }

  async unsettledSpend(network: string, walletAddress: string): Promise<UnsettledSpend> {
    const rows = await this.db
      .selectFrom('payments')
      .select(['amount', 'fee', 'asset'])
      .where('wallet_address', '=', walletAddress)
      .where('network', '=', network)
      .where('direction', '=', 'sent')
      .where('mode', '=', 'custodial')
      // Literals, as the partial index payments_unsettled is defined (migration 0017).
      .where(sql<boolean>`status in ('pending', 'submitted')`)
      .execute();
    // Amounts are decimal text (wei exceeds 64 bits), so they are summed here rather than in SQL.
    let native = 0n;
    const tokens = new Map<string, bigint>();
    for (const r of rows) {
      native += BigInt(r.fee ?? '0');
      if (r.asset === null) native += BigInt(r.amount);
      else tokens.set(r.asset, (tokens.get(r.asset) ?? 0n) + BigInt(r.amount));
    }
    return { native, tokens };
  }

  async countByStatus(): Promise<{ network: string; status: string; count: number }[]> {
    const rows = await this.db
      .selectFrom('payments')
      .select(['network', 'status', (eb) => eb.fn.countAll().as('count')])
      .groupBy(['network', 'status'])
      .execute();
    // PostgreSQL answers count(*) as bigint text; SQLite as a number.
    return rows.map((r) => ({ network: r.network, status: r.status, count: Number(r.count) }));
  }

  async history(query: HistoryQuery): Promise<{ total: number; payments: PaymentSummary[] }> {
    const { accountId, walletAddress, direction, limit, offset } = query;
    const [count, rows] = await Promise.all(
      direction === undefined
        ? [
            historyCountQuery(this.db, accountId, walletAddress),
            historyPageQuery(this.db, accountId, walletAddress, limit, offset),
          ]
        : [
            historyCountOfDirectionQuery(this.db, accountId, walletAddress, direction),
            historyPageOfDirectionQuery(this.db, accountId, walletAddress, direction, limit, offset),
          ],
    );
    return { total: Number(count[0]?.n ?? 0), payments: rows.map(toSummary) };
  }

  async historyVersion(
    accountId: string,
    walletAddress: string,
    direction: PaymentDirection | undefined,
  ): Promise<HistoryVersion> {
    const rows = await historyVersionQuery(this.db, accountId, walletAddress);
    let total = 0;
    let version = 0;
    for (const row of rows) {
      // PostgreSQL answers bigint as text; both stay far below 2^53.
      const n = Number(row.n);
      if (direction === undefined || row.direction === direction) total += n;
      version += n + Number(row.changes);
    }
    return { total, version };
  }

  async search(query: PaymentSearch): Promise<{ total: number; payments: PaymentSummary[] }> {
    let base = this.db.selectFrom('payments').where('account_id', '=', query.accountId);
    if (query.walletAddress !== undefined) base = base.where('wallet_address', '=', query.walletAddress);
    if (query.direction !== undefined) base = base.where('direction', '=', query.direction);
    if (query.status !== undefined) base = base.where('status', '=', query.status);
    const [count, rows] = await Promise.all([
      base.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
      base
        .select(SUMMARY_COLUMNS)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(query.limit)
        .offset(query.offset)
        .execute(),
    ]);
    return { total: Number(count.n), payments: rows.map(toSummary) };
  }

  exportPage(query: ExportPageQuery): Promise<ExportedPayment[]> {
    return exportPage(this.db, query);
  }

  async lease(
    owner: string,
    statuses: readonly PaymentStatus[],
    now: number,
    until: number,
    limit: number,
  ): Promise<PaymentRecord[]> {
    const eb = expressionBuilder<Database, 'payments'>();
    const rows = await leaseRows(this.db, {
      table: 'payments',
      eligible: eb('status', 'in', [...statuses]),
      orderBy: 'created_at',
      owner,
      now,
      until,
      limit,
    });
    return rows.map(toPayment);
  }

  async leaseExpired(
    owner: string,
    mode: PaymentMode,
    expiredSince: number,
    now: number,
    until: number,
    limit: number,
  ): Promise<PaymentRecord[]> {
    const eb = expressionBuilder<Database, 'payments'>();
    const rows = await leaseRows(this.db, {
      table: 'payments',
      eligible: eb.and([
        eb('status', '=', 'expired'),
        eb('updated_at', '>=', expiredSince),
        eb('mode', '=', mode),
      ]),
      orderBy: 'updated_at',
      owner,
      now,
      until,
      limit,
    });
    return rows.map(toPayment);
  }

  async lockRefunds(paymentId: string, at: number): Promise<void> {
    // A write, so that on SQLite the transaction holds the one writer before it reads the refunds; on
    // PostgreSQL the row stays locked to the commit (insert or update alike).
    await this.db
      .insertInto('refund_locks')
      .values({ payment_id: paymentId, updated_at: at })
      .onConflict((oc) =>
        oc.column('payment_id').doUpdateSet((eb) => ({ updated_at: eb.ref('excluded.updated_at') })),
      )
      .execute();
  }

  async refundsOf(paymentId: string): Promise<RefundSummary[]> {
    const rows = await this.db
      .selectFrom('payments')
      .select(['id', 'status', 'mode', 'amount', 'created_at'])
      .where('refund_of', '=', paymentId)
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .execute();
    return rows.map((row) => ({
      id: row.id,
      status: row.status as PaymentStatus,
      mode: row.mode as PaymentMode,
      amount: BigInt(row.amount),
      createdAt: Number(row.created_at),
    }));
  }

  async releaseLease(id: string, owner: string, notBefore?: number): Promise<void> {
    await this.db
      .updateTable('payments')
      .set({ lease_owner: null, lease_until: notBefore ?? null })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .execute();
  }
}

/** Raises the version of the history `row` is shown in (HistoryVersion): the caller's transaction commits it with the change. */
async function historyChanged(
  db: Kysely<Database>,
  row: Pick<Selectable<PaymentsTable>, 'account_id' | 'wallet_address' | 'direction'>,
): Promise<void> {
  await historyChangedQuery(db, row.account_id, row.wallet_address, row.direction);
}

function columns(changes: PaymentChanges): Updateable<PaymentsTable> {
  const set: Updateable<PaymentsTable> = {};
  if (changes.signature !== undefined) set.signature = changes.signature;
  if (changes.amount !== undefined) set.amount = changes.amount.toString();
  if (changes.signedTransaction !== undefined) set.signed_transaction = changes.signedTransaction;
  if (changes.lastValidBlockHeight !== undefined)
    set.last_valid_block_height = toNumber(changes.lastValidBlockHeight);
  if (changes.slot !== undefined) set.slot = toNumber(changes.slot);
  if (changes.blockHeight !== undefined) set.block_height = toNumber(changes.blockHeight);
  if (changes.error !== undefined) set.error = changes.error;
  if (changes.fee !== undefined) set.fee = changes.fee?.toString() ?? null;
  if (changes.confirmedAt !== undefined) set.confirmed_at = changes.confirmedAt;
  if (changes.replacedSignatures !== undefined)
    set.replaced_signatures = signatureList(changes.replacedSignatures);
  // A held refund gets its EVM nonce when it is released (services/payments/refunds/held-refund.ts).
  if (changes.nonce !== undefined) set.nonce = toNumber(changes.nonce);
  return set;
}

/** Slots and block heights stay far below 2^53, so they are stored as plain integers. */
function toNumber(value: bigint | null): number | null {
  return value === null ? null : Number(value);
}

function signatureList(signatures: readonly string[] | undefined): string | null {
  return signatures === undefined || signatures.length === 0 ? null : JSON.stringify(signatures);
}

function toBigint(value: number | string | null): bigint | null {
  return value === null ? null : BigInt(value);
}

function toPayment(row: Selectable<PaymentsTable>): PaymentRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    direction: row.direction as PaymentDirection,
    mode: row.mode as PaymentMode,
    status: row.status as PaymentStatus,
    network: row.network,
    walletAddress: row.wallet_address,
    sender: row.sender,
    recipient: row.recipient,
    amount: BigInt(row.amount),
    fee: toBigint(row.fee),
    resource: row.resource,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
    signature: row.signature,
    reference: row.reference,
    signedTransaction: row.signed_transaction,
    lastValidBlockHeight: toBigint(row.last_valid_block_height),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    slot: toBigint(row.slot),
    blockHeight: toBigint(row.block_height),
    error: row.error,
    sourcePaymentId: row.source_payment_id,
    idempotencyKey: row.idempotency_key,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    confirmedAt: row.confirmed_at === null ? null : Number(row.confirmed_at),
    // Only EVM custodial sends have these; other payments read exactly as they were written.
    ...(row.nonce === null ? {} : { nonce: BigInt(row.nonce) }),
    ...(row.replaced_signatures === null
      ? {}
      : { replacedSignatures: JSON.parse(row.replaced_signatures) as string[] }),
    ...(row.asset === null || row.asset_decimals === null
      ? {}
      : { asset: { address: row.asset, decimals: Number(row.asset_decimals) } }),
    ...(row.refund_of === null ? {} : { refundOf: row.refund_of }),
    ...(row.refund_reason === null ? {} : { refundReason: row.refund_reason }),
  };
}
