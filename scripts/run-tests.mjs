#!/usr/bin/env node
// Runs every `*.test.ts` under packages/*/test with node:test through tsx.
// Node 20's test runner does not expand globs itself, hence this small launcher.
// Usage: npm test [-- <substring filter on the file path>...]
//        node scripts/run-tests.mjs --tier <unit|integration|contract|e2e> [filters...]
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
const tierFlag = args.indexOf('--tier');
const tier = tierFlag === -1 ? undefined : args[tierFlag + 1];
if (tierFlag !== -1 && !TIERS.includes(tier)) {
  console.error(`--tier must be one of ${TIERS.join(', ')}`);
  process.exit(2);
}
const filters = tierFlag === -1 ? args : args.filter((_, i) => i !== tierFlag && i !== tierFlag + 1);

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
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=./scripts/summary-reporter.mjs',
    '--test-reporter-destination=stdout',
    ...files,
  ],
  { cwd: root, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
