#!/usr/bin/env node
// The `gate402` command. Installed from npm it runs the compiled JavaScript (dist/). In the repository,
// where the TypeScript sources and tsx are beside it, it runs the sources, resolving the workspace
// packages to theirs too (export condition @gate402/source), so the CLI is never older than the code.
import { existsSync } from 'node:fs';
import { register } from 'node:module';

const source = new URL('../src/cli/gate402.ts', import.meta.url);
if (existsSync(source) && process.env.GATE402_COMPILED !== '1') {
  const { register: registerTsx } = await import('tsx/esm/api');
  registerTsx();
  register(
    'data:text/javascript,export async function resolve(s, c, next) { return next(s, { ...c, conditions: [...c.conditions, "@gate402/source"] }); }',
  );
  await import(source.href);
} else {
  await import('../dist/cli/gate402.js');
}
