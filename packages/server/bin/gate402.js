#!/usr/bin/env node
// The `gate402` command. The sources are TypeScript, run through tsx's loader: no build step, so
// `npm install` is all the set-up there is.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
