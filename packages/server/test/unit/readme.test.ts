import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { SETTINGS } from '../../src/config.ts';
import { ERROR_CATALOGUE } from '../../src/domain/error-catalogue.ts';
import { FEATURES } from '../../src/domain/plan-access.ts';

/** The README is a promise to users: what the code accepts and answers must be written there. */
const readme = readFileSync(new URL('../../../../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('documents every configuration variable', () => {
    for (const setting of Object.values(SETTINGS))
      assert.ok(readme.includes(`\`${setting.env}\``), setting.env);
  });

  it('documents every error code with its HTTP status', () => {
    for (const [code, { status }] of Object.entries(ERROR_CATALOGUE)) {
      const row = new RegExp(`\\| ${status} \\| \`${code}\` \\|`);
      assert.ok(row.test(readme), `README has no row "| ${status} | \`${code}\` |"`);
    }
  });

  it('names every plan feature', () => {
    for (const feature of FEATURES) assert.ok(readme.includes(`\`${feature}\``), feature);
  });

  it('starts with the two commands', () => {
    const firstBlock = readme.slice(
      readme.indexOf('```sh'),
      readme.indexOf('```', readme.indexOf('```sh') + 5),
    );
    assert.match(firstBlock, /npm install && npm start/);
    assert.match(firstBlock, /npm test/);
  });
});
