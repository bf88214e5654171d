#!/usr/bin/env node
// Runs every `*.test.ts` under packages/*/test with node:test through tsx.
// Node 20's test runner does not expand globs itself, hence this small launcher.
// Usage: npm test [-- <substring filter on the file path>...]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const filters = process.argv.slice(2);

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
  .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
  .sort();

if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

const result = spawnSync(
  process.execPath,
  [
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
