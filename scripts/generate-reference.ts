// Writes docs/reference/configuration.md and errors.md from the code (see scripts/reference/).
// Usage: npm run docs:reference [-- --check]   (--check: write nothing, exit 1 when a page is stale)
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REFERENCE_PAGES } from './reference/reference-pages.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const check = process.argv.includes('--check');
let stale = 0;
for (const [path, render] of Object.entries(REFERENCE_PAGES)) {
  const file = join(root, path);
  const text = render();
  const current = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  if (current === text) continue;
  if (check) {
    stale += 1;
    console.error(`${path} is stale: run npm run docs:reference`);
  } else {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    console.log(`wrote ${path}`);
  }
}
process.exitCode = stale === 0 ? 0 : 1;
