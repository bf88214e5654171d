// The export benchmark's reference: the same rows read straight from SQLite (better-sqlite3's iterator,
// no gateway, no HTTP), each written as a comma-joined line to /dev/null. Prints rows, ms and peak RSS.
import { closeSync, openSync, writeSync } from 'node:fs';
import Database from 'better-sqlite3';

const db = new Database(process.env.BENCH_DB_FILE ?? '', { readonly: true });
const out = openSync('/dev/null', 'w');
const started = performance.now();
let rows = 0;
let chunk = '';
for (const row of db
  .prepare('select * from payments where account_id = ? order by created_at, id')
  .iterate(process.env.BENCH_ACCOUNT_ID ?? '') as Iterable<Record<string, unknown>>) {
  chunk += `${Object.values(row).join(',')}\r\n`;
  rows += 1;
  if (rows % 1000 === 0) {
    writeSync(out, chunk);
    chunk = '';
  }
}
writeSync(out, chunk);
closeSync(out);
db.close();
process.stdout.write(
  `ROWS ${rows}\nMS ${Math.round(performance.now() - started)}\nMAXRSS ${process.resourceUsage().maxRSS}\n`,
);
