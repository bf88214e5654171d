import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { REFERENCE_PAGES } from '../../../../scripts/reference/reference-pages.ts';

/**
 * docs/reference/ is rendered from the settings table and the error catalogue; a change to either without
 * `npm run docs:reference` leaves the committed pages stale, and this fails (as `--check` does).
 */
describe('reference pages', () => {
  for (const [path, render] of Object.entries(REFERENCE_PAGES)) {
    it(`${path} is what npm run docs:reference writes`, () => {
      const committed = readFileSync(new URL(`../../../../${path}`, import.meta.url), 'utf8');
      assert.ok(committed === render(), `${path} is stale: run npm run docs:reference`);
    });
  }
});
