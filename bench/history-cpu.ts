// GET /payment/history (limit 50, BENCH_HISTORY_ROWS stored, default 100,000) in one process, CPU per
// request through app.inject, the variants alternating round by round so a loaded machine weighs on all
// alike (#31). Not part of `npm run bench`: a before/after tool for the history page's own code.
// - bare: a bare Fastify route answering a constant, as `npm run bench` compares against;
// - before: the route as it was before the page cache (the page read and serialized on each request),
//   registered beside the real one with the same schema, feature and handler body;
// - after: the real route, the page kept in memory (each request reads the wallet's version);
// - miss: the real route with nothing kept (every request a miss: version, page, render, digest).
// Then the write side, SQLite (BENCH_HISTORY_WRITES transitions, default 2,000): CPU per state change
// (each its own transaction, as the services make them) by the repository before this change (a
// payment-repository.before.ts copy made with `git show <commit>:<file>`, never committed) and now;
// and with DATABASE_URL, state changes of one wallet running concurrently on PostgreSQL.
import { randomBytes } from 'node:crypto';
import { getAddressDecoder } from '@solana/kit';
import Fastify from 'fastify';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { newId } from '../packages/server/src/domain/ids.ts';
import type { PaymentRecord } from '../packages/server/src/domain/records/payment-records.ts';
import { callerOf } from '../packages/server/src/http/plugins/authentication.ts';
import { HistoryPageCache } from '../packages/server/src/services/payments/history-page-cache.ts';
import { newPayment } from '../packages/server/src/services/payments/new-payment.ts';
import type { PaymentQueryService } from '../packages/server/src/services/payments/payment-query.ts';
import type { Database } from '../packages/server/src/store/database-schema.ts';
import type { PaymentRepository } from '../packages/server/src/store/store.ts';
import { bearer, startTestGateway } from '../packages/server/test/support/test-gateway.ts';

const ROWS = Number(process.env.BENCH_HISTORY_ROWS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_HISTORY_ROUNDS ?? 6);
const PER_ROUND = Number(process.env.BENCH_HISTORY_REQUESTS ?? 300);
const WRITES = Number(process.env.BENCH_HISTORY_WRITES ?? 2_000);

let query: PaymentQueryService | undefined;
const gw = await startTestGateway({
  extraRoutes: (app) => {
    app.get(
      '/bench/history-before/:walletAddress',
      {
        config: { feature: 'history' },
        schema: {
          params: Type.Object({ walletAddress: Type.String() }),
          querystring: Type.Object({
            type: Type.Union([Type.Literal('sent'), Type.Literal('received'), Type.Literal('all')], {
              default: 'all',
            }),
            limit: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
            offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 }),
          }),
          // The route's own 200 schema, so Fastify serializes as the real route did.
          response: { 200: historySchema() },
        },
      },
      async (request) => {
        const q = request.query as { type: 'all'; limit: number; offset: number };
        return query?.history(callerOf(request).account.id, {
          walletAddress: (request.params as { walletAddress: string }).walletAddress,
          ...q,
        });
      },
    );
  },
});
query = gw.services.query;
const { accountId, key } = await gw.newCaller('enterprise', 1_000_000);
const wallet = getAddressDecoder().decode(randomBytes(32));
await gw.store.wallets.insert({
  id: newId('wal'),
  accountId,
  family: 'solana',
  network: null,
  address: wallet,
  watchOnly: true,
  encryptedSecret: null,
  createdAt: Date.now(),
  label: null,
});
const start = Date.now() - ROWS * 1_000;
await gw.store.transaction(async (tx) => {
  for (let i = 0; i < ROWS; i++) {
    await tx.payments.insert(
      newPayment(start + i * 1_000, {
        id: newId('pay', start + i * 1_000),
        accountId,
        direction: i % 3 === 0 ? 'received' : 'sent',
        mode: 'custodial',
        status: 'finalized',
        network: 'solana:bench',
        walletAddress: wallet,
        sender: wallet,
        recipient: 'RecipientRecipientRecipientRecipient11111111',
        amount: 1_000_000n + BigInt(i),
        fee: 5_000n,
        resource: 'https://api.example.com/data',
        metadata: { i },
        signature: `bench${i}`,
        createdAt: start + i * 1_000,
        updatedAt: start + i * 1_000,
        confirmedAt: start + i * 1_000,
      }),
    );
  }
});

const bare = Fastify({ logger: false });
bare.get('/constant', async () => ({ ok: true }));
await bare.ready();

const headers = bearer(key);
const kept = (query as unknown as { pages: HistoryPageCache }).pages;
const none = new HistoryPageCache(0, 0);
const variants = {
  bare: { app: bare, url: '/constant', pages: kept },
  before: { app: gw.app, url: `/bench/history-before/${wallet}?limit=50`, pages: kept },
  after: { app: gw.app, url: `/payment/history/${wallet}?limit=50`, pages: kept },
  miss: { app: gw.app, url: `/payment/history/${wallet}?limit=50`, pages: none },
};
const bodies = new Map<string, string>();
const cpu: Record<string, number[]> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, v] of Object.entries(variants)) {
    (query as unknown as { pages: HistoryPageCache }).pages = v.pages;
    global.gc?.();
    let used = 0;
    for (let i = 0; i < PER_ROUND; i++) {
      const c0 = process.cpuUsage();
      const res = await v.app.inject({ method: 'GET', url: v.url, headers });
      const c = process.cpuUsage(c0);
      used += c.user + c.system;
      if (res.statusCode !== 200) throw new Error(`${name}: ${res.statusCode} ${res.body}`);
      if (i === 0 && name !== 'bare') {
        const seen = bodies.get('page');
        if (seen === undefined) bodies.set('page', res.body);
        else if (JSON.stringify(JSON.parse(seen)) !== JSON.stringify(JSON.parse(res.body))) {
          throw new Error(`${name} answered another page`);
        }
      }
    }
    cpu[name] = [...(cpu[name] ?? []), used / PER_ROUND];
  }
}
(query as unknown as { pages: HistoryPageCache }).pages = kept;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const bareUs = median(cpu.bare ?? []);
console.log(`history page, ${ROWS} stored, limit 50, ${ROUNDS} rounds of ${PER_ROUND}, CPU µs per request:`);
for (const [name, xs] of Object.entries(cpu)) {
  const m = median(xs);
  console.log(
    `  ${name.padEnd(7)} median ${m.toFixed(1)} (rounds ${xs.map((x) => x.toFixed(0)).join(', ')})  bare/this ${(bareUs / m).toFixed(2)}`,
  );
}

// The write side: state changes before and after (the version bump in each change's transaction).
const old = new URL('../packages/server/src/store/kysely/payment-repository.before.ts', import.meta.url).href;
const { KyselyPaymentRepository: Before } = (await import(old)) as {
  KyselyPaymentRepository: new (db: Kysely<Database>) => PaymentRepository;
};
const db = (gw.store as unknown as { db: Kysely<Database> }).db;
const repos = { before: new Before(db), after: gw.store.payments };
const writeCpu: Record<string, number[]> = {};
const batch = Math.max(1, Math.floor(WRITES / ROUNDS / 2));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, repo] of Object.entries(repos)) {
    const payments: PaymentRecord[] = [];
    for (let i = 0; i < batch; i++) {
      const at = Date.now();
      const p = newPayment(at, {
        id: newId('pay', at),
        accountId,
        direction: 'received',
        mode: 'custodial',
        status: 'submitted',
        network: 'solana:bench',
        walletAddress: wallet,
        sender: 'SenderSenderSenderSenderSender111111111111',
        recipient: wallet,
        amount: 1_000n,
        signature: `w${round}${name}${i}`,
      });
      await gw.store.payments.insert(p);
      payments.push(p);
    }
    global.gc?.();
    const c0 = process.cpuUsage();
    for (const p of payments) {
      const moved = await repo.transition(p.id, ['submitted'], 'confirmed', { slot: 1n }, Date.now());
      if (moved === undefined) throw new Error('not moved');
    }
    const c = process.cpuUsage(c0);
    writeCpu[name] = [...(writeCpu[name] ?? []), (c.user + c.system) / batch];
  }
}
console.log(
  `state change (submitted → confirmed, one transaction each), ${ROUNDS} rounds of ${batch}, CPU µs:`,
);
for (const [name, xs] of Object.entries(writeCpu)) {
  console.log(
    `  ${name.padEnd(7)} median ${median(xs).toFixed(1)} (rounds ${xs.map((x) => x.toFixed(0)).join(', ')})`,
  );
}
await bare.close();
await gw.close();

// PostgreSQL (with DATABASE_URL): the wallet's count row a state change now locks to its commit. One
// wallet, CONCURRENT state changes in flight at a time, before and after alternating: wall time per
// change (the locks' queue shows there) and CPU.
if (process.env.DATABASE_URL !== undefined) {
  const { tempPostgres } = await import('../packages/server/test/support/databases.ts');
  const storage = await tempPostgres();
  const pgGw = await startTestGateway({ storage });
  try {
    const pgDb = (pgGw.store as unknown as { db: Kysely<Database> }).db;
    const pgRepos = { before: new Before(pgDb), after: pgGw.store.payments };
    const owner = await pgGw.newCaller('enterprise', 1_000_000);
    const concurrent = Number(process.env.BENCH_HISTORY_CONCURRENT ?? 16);
    const perRound = Number(process.env.BENCH_HISTORY_PG_WRITES ?? 320);
    const results: Record<string, { wall: number[]; cpu: number[] }> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, repo] of Object.entries(pgRepos)) {
        const ids: string[] = [];
        for (let i = 0; i < perRound; i++) {
          const at = Date.now();
          const p = newPayment(at, {
            id: newId('pay', at),
            accountId: owner.accountId,
            direction: 'received',
            mode: 'custodial',
            status: 'submitted',
            network: 'solana:bench',
            walletAddress: wallet,
            sender: 'SenderSenderSenderSenderSender111111111111',
            recipient: wallet,
            amount: 1_000n,
            signature: `pg${round}${name}${i}`,
          });
          await pgGw.store.payments.insert(p);
          ids.push(p.id);
        }
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        let next = 0;
        await Promise.all(
          Array.from({ length: concurrent }, async () => {
            while (next < ids.length) {
              const id = ids[next++] as string;
              if ((await repo.transition(id, ['submitted'], 'confirmed', {}, Date.now())) === undefined) {
                throw new Error('not moved');
              }
            }
          }),
        );
        const wall = ((performance.now() - t0) * 1000) / perRound;
        const c = process.cpuUsage(c0);
        const entry = results[name] ?? { wall: [], cpu: [] };
        results[name] = { wall: [...entry.wall, wall], cpu: [...entry.cpu, (c.user + c.system) / perRound] };
      }
    }
    console.log(
      `PostgreSQL, one wallet, ${concurrent} state changes in flight, ${ROUNDS} rounds of ${perRound}, µs per change:`,
    );
    for (const [name, r] of Object.entries(results)) {
      console.log(
        `  ${name.padEnd(7)} wall ${median(r.wall).toFixed(0)} (rounds ${r.wall.map((x) => x.toFixed(0)).join(', ')}), CPU ${median(r.cpu).toFixed(0)}`,
      );
    }
  } finally {
    await pgGw.close();
  }
}

function historySchema() {
  const entry = Type.Object({
    paymentId: Type.String(),
    type: Type.String(),
    refundOf: Type.Optional(Type.String()),
    amount: Type.Number(),
    recipient: Type.Optional(Type.String()),
    sender: Type.Optional(Type.String()),
    resource: Type.Optional(Type.String()),
    status: Type.String(),
    timestamp: Type.Integer(),
    signature: Type.Union([Type.String(), Type.Null()]),
    network: Type.String(),
    asset: Type.Object({
      symbol: Type.Union([Type.String(), Type.Null()]),
      address: Type.Union([Type.String(), Type.Null()]),
      decimals: Type.Integer(),
    }),
  });
  return Type.Object({
    walletAddress: Type.String(),
    total: Type.Integer(),
    limit: Type.Integer(),
    offset: Type.Integer(),
    payments: Type.Array(entry),
  });
}
