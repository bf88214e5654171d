#!/usr/bin/env node
// The `gate402` command. Installed from npm it runs the compiled JavaScript (dist/). In the repository,
// where the TypeScript sources and tsx are beside it, it runs the sources, resolving the workspace
// packages to theirs too (export condition @gate402/source), so the CLI is never older than the code.
// Sources without tsx (a container image pruned of dev dependencies) run the compiled form as well;
// GATE402_COMPILED=1 asks for it outright.
import { existsSync } from 'node:fs';
import { register } from 'node:module';

const source = new URL('../src/cli/gate402.ts', import.meta.url);
const tsx =
  existsSync(source) && process.env.GATE402_COMPILED !== '1'
    ? await import('tsx/esm/api').catch(() => undefined)
    : undefined;
if (tsx !== undefined) {
  tsx.register();
  register(
    'data:text/javascript,export async function resolve(s, c, next) { return next(s, { ...c, conditions: [...c.conditions, "@gate402/source"] }); }',
  );
  await import(source.href);
} else {
  await import('../dist/cli/gate402.js');
}
