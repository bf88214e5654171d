// In-process CPU cost of a CSV (or JSONL) export, old implementation vs new, alternating in one process
// so a loaded machine weighs on both alike. Not part of `npm run bench`: a before/after tool for the
// export's own code. BENCH_EXPORT_ROWS rows (default 200,000), BENCH_EXPORT_ROUNDS pairs (default 3),
// BENCH_EXPORT_FORMAT csv|jsonl. The old implementation is read from *.before.ts copies next to the
// sources (made with `git show <commit>:<file>`), which are never committed.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { NetworkRegistry } from '../packages/server/src/chains/network-registry.ts';
import { loadConfig } from '../packages/server/src/config.ts';
import { AccountService } from '../packages/server/src/services/accounts/account-service.ts';
import { SecretBox } from '../packages/server/src/services/custody/secret-box.ts';
import { PaymentExportService } from '../packages/server/src/services/payments/export/payment-export-service.ts';
import { WalletService } from '../packages/server/src/services/wallets/wallet-service.ts';
import type { Database } from '../packages/server/src/store/database-schema.ts';
import { openStore, storageLocation } from '../packages/server/src/store/open-store.ts';
import type { ExportedPayment, ExportPageQuery } from '../packages/server/src/store/payment-export.ts';
import type { Store } from '../packages/server/src/store/store.ts';
import { seed } from './export.ts';

const ROWS = Number(process.env.BENCH_EXPORT_ROWS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_EXPORT_ROUNDS ?? 3);
const FORMAT = (process.env.BENCH_EXPORT_FORMAT ?? 'csv') as 'csv' | 'jsonl';

const dataDir = mkdtempSync(join(tmpdir(), 'gate402-bench-export-cpu-'));
try {
  const config = loadConfig({ DATA_DIR: dataDir, GATE402_DEMO: 'false' });
  const location = storageLocation(config);
  if (location.kind !== 'sqlite') throw new Error('runs on SQLite');
  const { store: setup } = await openStore(location);
  const account = await new AccountService(setup).createAccount({
    name: 'cpu',
    plan: 'enterprise',
    rateLimit: 1,
  });
  await setup.close();
  seed(location.file, account.id, ROWS);
  const { store } = await openStore(location);
  const networks = new NetworkRegistry([]);
  const wallets = new WalletService(store, networks, new SecretBox(Buffer.alloc(32, 7)));
  // Computed paths: the copies exist only while measuring, and the type checker must not look for them.
  const old = (path: string) => new URL(`../packages/server/src/${path}.before.ts`, import.meta.url).href;
  const before = (await import(old('services/payments/export/payment-export-service'))) as {
    PaymentExportService: typeof PaymentExportService;
  };
  const { exportPage: beforePage } = (await import(old('store/kysely/payment-export-query'))) as {
    exportPage: (db: Kysely<Database>, query: ExportPageQuery) => Promise<ExportedPayment[]>;
  };
  const db = (store as unknown as { db: Kysely<Database> }).db;
  const beforeStore = {
    ...store,
    payments: { exportPage: (query: ExportPageQuery) => beforePage(db, query) },
  } as unknown as Store;
  const services = {
    before: new before.PaymentExportService(beforeStore, networks, wallets),
    after: new PaymentExportService(store, networks, wallets),
  };
  const results: Record<string, { cpu: number[]; wall: number[]; hash: string; bytes: number }> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of (process.env.BENCH_EXPORT_ONLY === undefined
      ? ['before', 'after']
      : [process.env.BENCH_EXPORT_ONLY]) as ('before' | 'after')[]) {
      global.gc?.();
      const cpu0 = process.cpuUsage();
      const wall0 = performance.now();
      const file = await services[name].open(account.id, { format: FORMAT });
      const hash = createHash('sha256');
      let bytes = 0;
      for await (const chunk of file.body) {
        hash.update(chunk as Buffer);
        bytes += (chunk as Buffer).length;
      }
      const cpu = process.cpuUsage(cpu0);
      const digest = hash.digest('hex');
      const entry = results[name] ?? { cpu: [], wall: [], hash: digest, bytes };
      results[name] = entry;
      if (entry.hash !== digest) throw new Error(`${name} wrote another file in round ${round + 1}`);
      entry.cpu.push((cpu.user + cpu.system) / 1000);
      entry.wall.push(performance.now() - wall0);
    }
  }
  await store.close();
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
  for (const [name, r] of Object.entries(results)) {
    const cpu = median(r.cpu);
    process.stdout.write(
      `${name}: ${ROWS} rows ${FORMAT}, CPU ms ${r.cpu.map(Math.round).join(' ')} (median ${Math.round(cpu)}, ${Math.round(((cpu * 1000) / ROWS) * 100) / 100} µs/row), wall ms ${r.wall.map(Math.round).join(' ')}, ${r.bytes} bytes sha256 ${r.hash.slice(0, 16)}\n`,
    );
  }
  if (
    results.before !== undefined &&
    results.after !== undefined &&
    results.before.hash !== results.after.hash
  )
    throw new Error('the two exports differ');
  if (results.before !== undefined && results.after !== undefined) process.stdout.write('identical output\n');
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
