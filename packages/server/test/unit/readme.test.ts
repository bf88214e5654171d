import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { SETTINGS } from '../../src/config.ts';
import { ERROR_CATALOGUE } from '../../src/domain/error-catalogue.ts';
import { FEATURES } from '../../src/domain/plan-access.ts';

/**
 * The documentation is a promise to users: what the code accepts and answers must be written there. The
 * reference pages are generated (reference-docs.test.ts holds them fresh); this checks what they promise.
 */
const read = (path: string) => readFileSync(new URL(`../../../../${path}`, import.meta.url), 'utf8');
const readme = read('README.md');
const configuration = read('docs/reference/configuration.md');
const errors = read('docs/reference/errors.md');

describe('README and reference pages', () => {
  it('document every configuration variable', () => {
    for (const setting of Object.values(SETTINGS))
      assert.ok(configuration.includes(`| \`${setting.env}\` |`), setting.env);
  });

  it('document every error code with its HTTP status', () => {
    for (const [code, { status }] of Object.entries(ERROR_CATALOGUE)) {
      const row = new RegExp(`\\| ${status} \\| \`${code}\` \\|`);
      assert.ok(row.test(errors), `errors.md has no row "| ${status} | \`${code}\` |"`);
    }
  });

  it('name every plan feature', () => {
    for (const feature of FEATURES) assert.ok(configuration.includes(`\`${feature}\``), feature);
  });

  it('start with the two commands, and keep the README short', () => {
    const firstBlock = readme.slice(
      readme.indexOf('```sh'),
      readme.indexOf('```', readme.indexOf('```sh') + 5),
    );
    assert.match(firstBlock, /npm install && npm start/);
    assert.match(firstBlock, /npm test/);
    assert.ok(readme.split('\n').length <= 300, `README has ${readme.split('\n').length} lines`);
  });

  it('have no placeholders in the walkthrough, and a fresh Idempotency-Key', () => {
    const walkthrough = readme.slice(readme.indexOf('## Five-minute walkthrough'));
    const block = walkthrough.slice(walkthrough.indexOf('```sh'), walkthrough.indexOf('```\n', 10));
    assert.doesNotMatch(block, /<[a-z][^>]*>|…/, 'a placeholder in the walkthrough');
    assert.match(block, /Idempotency-Key: \$\(node -p 'crypto\.randomUUID\(\)'\)/);
  });
});
