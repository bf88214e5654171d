// node:test reporter that ends the run with the slowest test files, then one plain line:
// `N passed, N failed, N skipped` (the last line; scripts and CI read it).
// Only leaf tests are counted (a suite's own pass/fail mirrors its children), and suites skipped whole
// (chromium, PostgreSQL or Redis missing): their tests never start, so the suite is the one skip reported.
import { relative } from 'node:path';

const SLOWEST = 20;

export default async function* summaryReporter(source) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  /** Per test file: the sum of its top-level tests' durations, and its whole run when the runner reports it. */
  const files = new Map();
  const fileOf = (file) => {
    let entry = files.get(file);
    if (entry === undefined) {
      entry = { tests: 0, wall: undefined };
      files.set(file, entry);
    }
    return entry;
  };
  // With a process per file, the runner reports one test per file, named after it: dequeued when the file
  // starts, completed with the file's whole run (process start, imports, module-level hooks), which its
  // tests' durations leave out. A test's own `file` is where it is declared, which for a shared suite
  // (store-contract.ts) is not the file run. Run one file at a time, such a test belongs to the file under
  // way; with several at once, node reports a file's tests when it gets to them, not while the file runs,
  // so those tests are left out of the sums rather than given to whichever file is under way then.
  const started = new Set();
  const running = new Set();
  let severalAtOnce = false;
  /** Tests declared outside the file run, and the one file under way when they were reported. */
  const declaredElsewhere = [];
  for await (const event of source) {
    const { file, name, nesting, details } = event.data ?? {};
    const fileLevel = file !== undefined && name === file && nesting === 0;
    if (fileLevel && event.type === 'test:dequeue') {
      started.add(file);
      running.add(file);
      if (running.size > 1) severalAtOnce = true;
    }
    if (fileLevel && event.type === 'test:complete') {
      running.delete(file);
      if (typeof details?.duration_ms === 'number') fileOf(file).wall = details.duration_ms;
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    if (!fileLevel && nesting === 0 && typeof details?.duration_ms === 'number' && file !== undefined) {
      if (started.has(file) || started.size === 0) fileOf(file).tests += details.duration_ms;
      else if (running.size === 1)
        declaredElsewhere.push({ owner: [...running][0], ms: details.duration_ms });
    }
    const skip = event.data.skip || event.data.todo;
    if (details?.type === 'suite') {
      if (skip) skipped++;
      continue;
    }
    if (skip) skipped++;
    else if (event.type === 'test:pass') passed++;
    else failed++;
  }
  if (!severalAtOnce) for (const { owner, ms } of declaredElsewhere) fileOf(owner).tests += ms;
  if (files.size > 0) yield slowestFiles(files, severalAtOnce);
  yield `\n${passed} passed, ${failed} failed, ${skipped} skipped\n`;
}

/** The slowest files, by whole run where known (else by their tests), with both figures in seconds. */
function slowestFiles(files, severalAtOnce) {
  const cwd = process.cwd();
  const rows = [...files]
    .map(([file, { tests, wall }]) => ({ file: relative(cwd, file), tests, total: wall ?? tests, wall }))
    .sort((a, b) => b.total - a.total);
  const seconds = (ms) => (ms / 1000).toFixed(1).padStart(7);
  const sum = rows.reduce((s, r) => s + r.total, 0);
  const lines = rows
    .slice(0, SLOWEST)
    .map(
      (r) =>
        `${seconds(r.total)} s ${r.wall === undefined ? '        ' : `${seconds(r.tests)} s`}  ${r.file}`,
    );
  return (
    `\nSlowest test files (of ${rows.length}, ${(sum / 1000).toFixed(1)} s in all): file run, its tests${severalAtOnce ? ' (those declared in it: files ran at once)' : ''}\n` +
    `${lines.join('\n')}\n`
  );
}
