// In-process CPU cost of a receive's storage work on SQLite (#31): the transaction that consumes the proof
// and records the payment with its event, as ReceivePaymentService runs it, through Store.transaction
// (group commit, flushed log). Two stores, A and B, alternate round by round in one process, so a loaded
// machine weighs on both alike; the figure is the main thread's CPU time per receive (from /proc), and
// the bytes the process wrote per receive (the log's frames). Not part of `npm run bench`: a before/after tool for the storage
// layout.
//
// BENCH_STORE_VARIANT=direct: B runs the same statements (consume, wallet count, payment, volume, event)
// as better-sqlite3 prepared statements called directly inside BEGIN … COMMIT, then waits for the flushed
// log as Store.transaction does: what Kysely's executor and the repositories cost above SQLite itself
// (the bound for running the receive's transaction on the group commit's connection, #31 item 3).
// BENCH_STORE_VARIANT=layout: A has `consumed_proofs` as the migrations make it (a rowid table and the
// primary key's index), B the same table WITHOUT ROWID (one b-tree; measured for #31, not adopted). BENCH_STORE_RECEIVES receives per round (default
// 6,000), BENCH_STORE_ROUNDS pairs (default 4), BENCH_STORE_CONCURRENCY receives started per event-loop
// turn (default 8: what 1,000/s over 100 connections gives each commit).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { NetworkRegistry } from '../packages/server/src/chains/network-registry.ts';
import { loadConfig } from '../packages/server/src/config.ts';
import { newId } from '../packages/server/src/domain/ids.ts';
import type { PaymentRecord } from '../packages/server/src/domain/records/payment-records.ts';
import { AccountService } from '../packages/server/src/services/accounts/account-service.ts';
import { newPayment } from '../packages/server/src/services/payments/new-payment.ts';
import { PaymentLedger } from '../packages/server/src/services/payments/payment-ledger.ts';
import { openStore, storageLocation } from '../packages/server/src/store/open-store.ts';
import type { Store } from '../packages/server/src/store/store.ts';

const RECEIVES = Number(process.env.BENCH_STORE_RECEIVES ?? 6_000);
const ROUNDS = Number(process.env.BENCH_STORE_ROUNDS ?? 4);
const CONCURRENCY = Number(process.env.BENCH_STORE_CONCURRENCY ?? 8);
const VARIANT = process.env.BENCH_STORE_VARIANT ?? 'layout';

interface Side {
  readonly name: string;
  readonly store: Store;
  readonly ledger: PaymentLedger;
  readonly accountId: string;
  readonly wal: string;
  readonly cpu: number[];
  readonly walBytes: number[];
  readonly direct?: (proofKey: string, payment: PaymentRecord, data: string) => Promise<void>;
}

function mainThreadCpuMs(): number {
  const stat = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function side(name: string, prepare: (store: Store) => Promise<void>): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `gate402-bench-receive-store-${name}-`));
  const location = storageLocation(loadConfig({ DATA_DIR: dir, GATE402_DEMO: 'false' }));
  if (location.kind !== 'sqlite') throw new Error('runs on SQLite');
  const { store } = await openStore(location);
  await prepare(store);
  const account = await new AccountService(store).createAccount({ name, plan: 'enterprise', rateLimit: 1 });
  return {
    name,
    store,
    ledger: new PaymentLedger(store, new NetworkRegistry([])),
    accountId: account.id,
    wal: `${location.file}-wal`,
    cpu: [],
    walBytes: [],
  };
}

/** `consumed_proofs` rebuilt WITHOUT ROWID (empty, as every side starts). */
async function withoutRowidConsumedProofs(store: Store): Promise<void> {
  const db = (store as unknown as { db: import('kysely').Kysely<unknown> }).db;
  await sql`drop table consumed_proofs`.execute(db);
  await sql`create table consumed_proofs (proof_key text primary key, payment_id text not null,
    account_id text not null, consumed_at bigint not null) without rowid`.execute(db);
}

/** Bytes this process has written so far (every thread: the log's pwrite calls), from /proc. */
function bytesWritten(): number {
  return Number(/wchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))?.[1]);
}

let counter = 0;

/** A side whose receives run as prepared statements on its own better-sqlite3 connection (see `direct`). */
async function directSide(name: string): Promise<Side> {
  const base = await side(name, async () => {});
  const file = base.wal.slice(0, -'-wal'.length);
  const { default: Database } = await import('better-sqlite3');
  const sqlite = new Database(file);
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('temp_store = MEMORY');
  const begin = sqlite.prepare('begin');
  const commit = sqlite.prepare('commit');
  const consume = sqlite.prepare(
    'insert into consumed_proofs (proof_key, payment_id, account_id, consumed_at) values (?, ?, ?, ?) on conflict (proof_key) do nothing',
  );
  const count = sqlite.prepare(
    'insert into payment_counts (account_id, wallet_address, direction, n) values (?, ?, ?, 1) on conflict (account_id, wallet_address, direction) do update set n = payment_counts.n + 1',
  );
  // The payment repository's INSERT column list, in its order.
  const columns = [
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
  ];
  const insertPayment = sqlite.prepare(
    `insert into payments (${columns.join(', ')}) values (${columns.map(() => '?').join(', ')})`,
  );
  const pieces = Array.from({ length: 9 }, (_, i) => `piece${i}`);
  const volume = sqlite.prepare(
    `insert into payment_volume (account_id, day, flow, network, asset, asset_decimals, resource, n, ${pieces.join(', ')})
     values (?, ?, ?, ?, ?, ?, ?, ?, ${pieces.map(() => '?').join(', ')})
     on conflict (account_id, day, flow, network, asset, asset_decimals, resource)
     do update set n = payment_volume.n + excluded.n, ${pieces.map((p) => `${p} = payment_volume.${p} + excluded.${p}`).join(', ')}`,
  );
  const event = sqlite.prepare(
    'insert into events (id, account_id, type, payment_id, data, created_at) values (?, ?, ?, ?, ?, ?) returning seq',
  );
  const store = base.store;
  const run = async (proofKey: string, p: PaymentRecord, data: string) => {
    begin.run();
    try {
      if (consume.run(proofKey, p.id, p.accountId, p.createdAt).changes !== 1) throw new Error('refused');
      count.run(p.accountId, p.walletAddress, p.direction);
      insertPayment.run(
        p.id,
        p.accountId,
        p.direction,
        p.mode,
        p.status,
        p.network,
        p.walletAddress,
        p.sender,
        p.recipient,
        p.amount.toString(),
        p.fee?.toString() ?? null,
        p.resource,
        null,
        p.signature,
        p.reference,
        null,
        null,
        null,
        Number(p.slot),
        Number(p.blockHeight),
        null,
        p.sourcePaymentId,
        null,
        null,
        null,
        p.createdAt,
        p.updatedAt,
        p.confirmedAt,
        null,
        null,
        null,
        null,
        null,
        null,
      );
      volume.run(
        p.accountId,
        Math.floor(p.createdAt / 86_400_000),
        'received',
        p.network,
        '',
        -1,
        '',
        1,
        1_000_000,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
      );
      event.get(newId('evt'), p.accountId, 'payment.received', p.id, data, p.createdAt);
      commit.run();
    } catch (error) {
      sqlite.prepare('rollback').run();
      throw error;
    }
    await store.durable();
  };
  return { ...base, direct: run };
}

async function receive(s: Side): Promise<void> {
  const at = Date.now();
  const n = counter++;
  const payment = newPayment(at, {
    id: newId('pay'),
    accountId: s.accountId,
    direction: 'received',
    mode: 'custodial',
    status: 'confirmed',
    network: 'solana:bench',
    walletAddress: 'SellerWallet1111111111111111111111111111111',
    sender: 'BuyerWallet11111111111111111111111111111111',
    recipient: 'SellerWallet1111111111111111111111111111111',
    amount: 1_000_000n,
    fee: 5_000n,
    signature: `sig${n}`.padEnd(88, 'x'),
    slot: BigInt(n),
    blockHeight: BigInt(n),
    sourcePaymentId: newId('pay'),
    confirmedAt: at,
  });
  if (s.direct !== undefined) {
    // The event's data as the ledger writes it: the payment's view (about this size).
    const data = JSON.stringify({
      ...payment,
      amount: '1',
      fee: '0.000005',
      slot: n,
      blockHeight: n,
      asset: { symbol: 'SOL', decimals: 9, address: null },
    });
    await s.direct(`solana:bench:${payment.signature}`, payment, data);
    return;
  }
  const consumed = await s.store.transaction(async (repos) => {
    if (!(await repos.proofs.consume(`solana:bench:${payment.signature}`, payment.id, s.accountId, at)))
      return false;
    await s.ledger.recordIn(repos, payment, 'payment.received');
    return true;
  });
  if (!consumed) throw new Error('a fresh proof was refused');
}

async function round(s: Side): Promise<void> {
  const writtenBefore = bytesWritten();
  const before = mainThreadCpuMs();
  for (let done = 0; done < RECEIVES; done += CONCURRENCY) {
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, RECEIVES - done) }, () => receive(s)));
  }
  s.cpu.push(((mainThreadCpuMs() - before) * 1000) / RECEIVES);
  s.walBytes.push((bytesWritten() - writtenBefore) / RECEIVES);
}

if (VARIANT !== 'layout' && VARIANT !== 'direct') throw new Error(`unknown BENCH_STORE_VARIANT ${VARIANT}`);
const sides =
  VARIANT === 'layout'
    ? [await side('A', async () => {}), await side('B', withoutRowidConsumedProofs)]
    : [await side('A', async () => {}), await directSide('B')];
// Warm-up (JIT, caches, the log file's first pages), not measured.
for (const s of sides) for (let i = 0; i < 500; i++) await receive(s);
for (let r = 0; r < ROUNDS; r++) {
  for (const s of r % 2 === 0 ? sides : [...sides].reverse()) await round(s);
  process.stdout.write(
    `round ${r + 1}: ${sides.map((s) => `${s.name} ${s.cpu.at(-1)?.toFixed(1)} µs, ${s.walBytes.at(-1)?.toFixed(0)} B written`).join('; ')}\n`,
  );
}
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)] ?? 0;
const [a, b] = sides as [Side, Side];
const ratios = b.cpu.map((c, i) => c / (a.cpu[i] ?? Number.NaN));
process.stdout.write(
  `CPU per receive (median of ${ROUNDS}): A ${median(a.cpu).toFixed(1)} µs, B ${median(b.cpu).toFixed(1)} µs; B÷A round by round ${ratios.map((x) => x.toFixed(2)).join(', ')}\n`,
);
for (const s of sides) {
  await s.store.close();
  rmSync(join(s.wal, '..'), { recursive: true, force: true });
}
