import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadConfig } from '../packages/server/src/config.ts';
import { AccountService } from '../packages/server/src/services/accounts/account-service.ts';
import { openStore, storageLocation } from '../packages/server/src/store/open-store.ts';
import type { Benchmark } from './bench-row.ts';

/** Rows in the account: the million. BENCH_EXPORT_ROWS makes a quicker run. */
const ROWS = Number(process.env.BENCH_EXPORT_ROWS ?? 1_000_000);

/**
 * GET /payment/export?format=csv of an account with ROWS payments on SQLite, downloaded in full over
 * loopback by this process, against a bare SELECT of the same rows written to /dev/null, each in a
 * process of its own so their peak RSS is their own: rows/s and peak RSS of both.
 */
const exportBenchmark: Benchmark = async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gate402-bench-export-'));
  try {
    const config = loadConfig({ DATA_DIR: dataDir, GATE402_DEMO: 'false' });
    const location = storageLocation(config);
    if (location.kind !== 'sqlite') throw new Error('the export benchmark runs on SQLite');
    const { store } = await openStore(location);
    const accounts = new AccountService(store);
    const account = await accounts.createAccount({
      name: 'bench export',
      plan: 'enterprise',
      rateLimit: 1_000_000,
    });
    const { key } = await accounts.createKey(account.id, 'bench');
    await store.close();
    seed(location.file, account.id, ROWS);

    const reference = await runChild(new URL('./servers/bare-select.ts', import.meta.url).pathname, {
      BENCH_DB_FILE: location.file,
      BENCH_ACCOUNT_ID: account.id,
    });
    const gateway = await exportThroughGateway(dataDir, key);
    if (gateway.rows !== ROWS) throw new Error(`the export had ${gateway.rows} rows, not ${ROWS}`);
    const referenceRate = Math.round(ROWS / ((reference.MS ?? 0) / 1000));
    return [
      {
        name: `CSV export throughput (${ROWS.toLocaleString('en-US')} rows, SQLite)`,
        value: Math.round(ROWS / (gateway.ms / 1000)),
        unit: 'rows/s',
        reference: { name: 'bare SELECT to /dev/null', value: referenceRate },
      },
      {
        name: 'CSV export peak RSS',
        value: Math.round(gateway.maxRssKiB / 1024),
        unit: 'MiB',
        reference: { name: 'bare SELECT to /dev/null', value: Math.round((reference.MAXRSS ?? 0) / 1024) },
        target: 'bounded (not growing with rows)',
      },
    ];
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
};

/** ROWS payments of the account, made in SQLite from one template row (seconds, not minutes). */
export function seed(file: string, accountId: string, rows: number): void {
  const db = new Database(file);
  try {
    const now = Date.now();
    db.prepare(
      `insert into payments (id, account_id, direction, mode, status, network, wallet_address, sender, recipient,
        amount, fee, resource, metadata, signature, created_at, updated_at, confirmed_at, block_height)
       with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
       select 'pay_' || printf('%026d', i), ?, case when i % 3 = 0 then 'sent' else 'received' end, 'custodial',
        'confirmed', 'solana:localnet', 'WALLET1111111111111111111111111111111111111', 'SENDER1111111111111111111111111111111111111',
        'WALLET1111111111111111111111111111111111111', cast(i * 1000 as text), '5000',
        'https://api.example.com/report?id=' || i, '{"order":"o-' || i || '","note":"a, \\"quoted\\" note"}',
        'sig' || printf('%085d', i), ? + i, ? + i, ? + i, i
       from n`,
    ).run(rows, accountId, now - rows - 1, now - rows - 1, now - rows - 1);
  } finally {
    db.close();
  }
}

/** The gateway in its own process; the whole file read here, counting its lines. */
async function exportThroughGateway(
  dataDir: string,
  key: string,
): Promise<{ rows: number; ms: number; maxRssKiB: number }> {
  const child = spawn(
    process.execPath,
    [
      '--conditions=@gate402/source',
      '--import',
      'tsx',
      new URL('./servers/export-gateway.ts', import.meta.url).pathname,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, BENCH_DATA_DIR: dataDir } },
  );
  const values: Record<string, string> = {};
  let buffer = '';
  const waitFor = (name: string) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        if (values[name] !== undefined) resolve(values[name] as string);
      };
      child.stdout.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        for (const line of buffer.split('\n')) {
          const [n, v] = line.split(' ');
          if (n && v) values[n] = v;
        }
        check();
      });
      child.once('exit', (code) => reject(new Error(`the export gateway exited with ${code}`)));
      check();
    });
  try {
    const port = await waitFor('PORT');
    const started = performance.now();
    const res = await fetch(`http://127.0.0.1:${port}/payment/export?format=csv`, {
      headers: { authorization: `Bearer ${key}` },
    });
    if (!res.ok || res.body === null) throw new Error(`export answered ${res.status}: ${await res.text()}`);
    let lines = 0;
    for await (const chunk of res.body) {
      const bytes = chunk as Uint8Array;
      for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) lines += 1;
    }
    const ms = performance.now() - started;
    child.stdin.end();
    const maxRss = Number(await waitFor('MAXRSS'));
    return { rows: lines - 1, ms, maxRssKiB: maxRss };
  } finally {
    child.kill('SIGTERM');
  }
}

async function runChild(script: string, env: Record<string, string>): Promise<Record<string, number>> {
  const child = spawn(process.execPath, ['--conditions=@gate402/source', '--import', 'tsx', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${script} exited with ${code}`);
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((line) => line.split(' '))
      .map(([name, value]) => [name, Number(value)]),
  );
}

export default exportBenchmark;
