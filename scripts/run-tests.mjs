#!/usr/bin/env node
// Runs every `*.test.ts` under packages/*/test with node:test through tsx.
// Node 20's test runner does not expand globs itself, hence this small launcher.
// Usage: npm test [-- <substring filter on the file path>...]
//        node scripts/run-tests.mjs --tier <unit|integration|contract|e2e> [filters...]
//        node scripts/run-tests.mjs --concurrency <n> [...]   (or TEST_CONCURRENCY=n): files run at once;
//          unset, node's default (one less than the cores: one file at a time on a 2-core machine, as CI)
//
// Tiers are folders: packages/<pkg>/test/<tier>/... A test file in no tier folder counts as integration.
//   unit         pure code and in-memory fakes: no chain, no database file, no socket, no child process
//   integration  the app with SQLite and the embedded chains, one feature per folder
//   contract     one suite run against every implementation of a port (stores, chain adapters)
//   e2e          whole processes: several instances, crashes, the CLI, containers, a browser
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const TIERS = ['unit', 'integration', 'contract', 'e2e'];
const args = process.argv.slice(2);
/** The value of `--name <value>`, taken out of `args`. */
function option(name) {
  const at = args.indexOf(name);
  if (at === -1) return undefined;
  const [, value] = args.splice(at, 2);
  return value;
}
const tier = option('--tier');
if (tier !== undefined && !TIERS.includes(tier)) {
  console.error(`--tier must be one of ${TIERS.join(', ')}`);
  process.exit(2);
}
const concurrency = option('--concurrency') ?? process.env.TEST_CONCURRENCY;
if (concurrency !== undefined && !/^[1-9][0-9]*$/.test(concurrency)) {
  console.error('--concurrency (TEST_CONCURRENCY) must be a whole number of test files, 1 or more');
  process.exit(2);
}
const filters = args;

/** The tier of a test file: the first folder under its package's test/ that names one, else integration. */
function tierOf(file) {
  const inTest = file.split('/test/')[1] ?? '';
  const first = inTest.split('/')[0];
  return TIERS.includes(first) ? first : 'integration';
}

function findTests(dir) {
  const found = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...findTests(path));
    else if (name.endsWith('.test.ts')) found.push(path);
  }
  return found;
}

const files = readdirSync(join(root, 'packages'))
  .map((pkg) => join(root, 'packages', pkg, 'test'))
  .filter((dir) => statSync(dir, { throwIfNoEntry: false })?.isDirectory())
  .flatMap(findTests)
  .map((file) => relative(root, file))
  .filter((file) => tier === undefined || tierOf(file) === tier)
  .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
  .sort();

if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

const result = spawnSync(
  process.execPath,
  [
    // The sources, through tsx, with workspace packages resolved to their sources (export condition).
    '--conditions=@gate402/source',
    '--import',
    'tsx',
    '--test',
    // A test file that hangs fails after this (the report names the file) instead of holding CI until its
    // hard limit; tests that wait on a chain bound each wait themselves, which names the step.
    '--test-timeout=300000',
    ...(concurrency === undefined ? [] : [`--test-concurrency=${concurrency}`]),
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=./scripts/summary-reporter.mjs',
    '--test-reporter-destination=stdout',
    ...files,
  ],
  { cwd: root, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
