// `npm run bench`: runs every benchmark of the project, prints one table, writes it as JSON.
// Figures are not tests: nothing here fails on a slow machine. Compare ratios, which are measured
// side by side in one run, rather than absolute figures across machines.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { Benchmark, BenchRow } from './bench-row.ts';

const BENCHMARKS: Record<string, () => Promise<{ default: Benchmark }>> = {
  account: () => import('./account.ts'),
  payments: () => import('./payments.ts'),
  receive: () => import('./receive.ts'),
  export: () => import('./export.ts'),
  localnet: () => import('./localnet.ts'),
  events: () => import('./events.ts'),
  facilitator: () => import('./facilitator.ts'),
  postgres: () => import('./postgres-receives.ts'),
  'x402-pay': () => import('./x402-pay.ts'),
  install: () => import('./install.ts'),
};

const only = process.argv.slice(2);
const rows: (BenchRow & { benchmark: string })[] = [];
for (const [name, loader] of Object.entries(BENCHMARKS)) {
  if (only.length > 0 && !only.includes(name)) continue;
  process.stderr.write(`running ${name}…\n`);
  try {
    const benchmark = (await loader()).default;
    for (const row of await benchmark()) rows.push({ benchmark: name, ...row });
  } catch (error) {
    process.stderr.write(`${name} failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}

printTable(rows);
const dir = new URL('./results/', import.meta.url).pathname;
mkdirSync(dir, { recursive: true });
const file = `${dir}${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
writeFileSync(
  file,
  `${JSON.stringify({ at: new Date().toISOString(), node: process.version, cpus: cpus().length, rows }, null, 2)}\n`,
);
process.stdout.write(`\nwritten to ${file}\n`);

function printTable(table: (BenchRow & { benchmark: string })[]): void {
  const header = ['benchmark', 'measure', 'value', 'reference', 'ratio', 'target', 'met'];
  const lines = table.map((r) => [
    r.benchmark,
    r.name,
    `${format(r.value)} ${r.unit}`,
    r.reference === undefined ? '' : `${format(r.reference.value)} (${r.reference.name})`,
    r.ratio !== undefined
      ? r.ratio.toFixed(2)
      : r.reference === undefined || r.reference.value === 0
        ? ''
        : (r.value / r.reference.value).toFixed(2),
    r.target ?? '',
    r.met === undefined ? '' : r.met ? 'yes' : 'NO',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const render = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  process.stdout.write(`${render(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n`);
  for (const line of lines) process.stdout.write(`${render(line)}\n`);
}

function format(value: number): string {
  return Number.isInteger(value) ? value.toLocaleString('en-US') : value.toFixed(2);
}
