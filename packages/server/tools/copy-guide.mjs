// npm pack (prepack): copies the repository's guides (docs/*.md, docs/reference/*.md) into guide/, which
// the published package carries and GET /docs/guide serves when the gateway runs compiled.
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const docs = fileURLToPath(new URL('../../../docs/', import.meta.url));
const guide = fileURLToPath(new URL('../guide/', import.meta.url));
rmSync(guide, { recursive: true, force: true });
for (const folder of ['', 'reference/']) {
  mkdirSync(`${guide}${folder}`, { recursive: true });
  for (const file of readdirSync(`${docs}${folder}`).filter((name) => name.endsWith('.md'))) {
    cpSync(`${docs}${folder}${file}`, `${guide}${folder}${file}`);
  }
}
