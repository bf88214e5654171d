import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * Every relative link of the documentation leads somewhere: the README, docs/ and each package's README
 * point into one another by path and heading anchor, and a moved section or renamed heading would
 * otherwise leave a reader at a 404 or the top of a page.
 */
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

function markdownUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownUnder(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

function documentationFiles(): string[] {
  const packages = readdirSync(join(ROOT, 'packages'))
    .map((name) => join(ROOT, 'packages', name, 'README.md'))
    .filter((path) => existsSync(path));
  return [join(ROOT, 'README.md'), ...markdownUnder(join(ROOT, 'docs')), ...packages];
}

/** The text outside fenced code blocks, where `[a](b)` is code, not a link. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of prose(markdown).matchAll(/^#{1,6} +(.+?) *#* *$/gm)) {
    const base = (heading ?? '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Relative link targets: `[text](target)` not to a scheme (https:, mailto:) and not site-absolute. */
function relativeLinks(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)]
    .map((m) => m[1] ?? '')
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('/'));
}

describe('documentation links', () => {
  it('reads the GitHub anchors of headings, code and links included', () => {
    assert.deepEqual(
      [...anchorsOf('# The `gate402` command\n## x402: the [built-in](x.md) one\n## Keys\n## Keys\n')],
      ['the-gate402-command', 'x402-the-built-in-one', 'keys', 'keys-1'],
    );
  });

  it('finds the guides it checks', () => {
    const files = documentationFiles().map((path) => relative(ROOT, path));
    for (const expected of [
      'README.md',
      'docs/x402.md',
      'docs/reference/errors.md',
      'packages/client/README.md',
    ])
      assert.ok(files.includes(expected), expected);
  });

  for (const file of documentationFiles()) {
    it(`${relative(ROOT, file)}: every relative link points to a file and heading that exist`, () => {
      const broken: string[] = [];
      for (const target of relativeLinks(readFileSync(file, 'utf8'))) {
        const [path = '', anchor] = target.split('#');
        const destination = path === '' ? file : resolve(dirname(file), decodeURI(path));
        if (!existsSync(destination)) {
          broken.push(`${target}: no such file`);
          continue;
        }
        if (anchor === undefined || anchor === '') continue;
        if (!destination.endsWith('.md')) continue;
        if (!anchorsOf(readFileSync(destination, 'utf8')).has(anchor))
          broken.push(`${target}: no heading with that anchor`);
      }
      assert.deepEqual(broken, []);
    });
  }
});
