import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { safeIconUrl } from '../../../src/services/facilitator/icon-url.ts';

/**
 * Review (session 17) of the bazaar catalogue's iconUrl filter (0c40817): every visitor's browser fetches
 * the listed icon, so a name that browsers resolve to this machine must be dropped like `localhost`.
 * Chromium and Firefox resolve every `*.localhost` name to loopback without asking DNS (RFC 6761 §6.3).
 */
describe('review-session17: bazaar iconUrl naming this machine', () => {
  it('an icon on a subdomain of localhost is dropped', {
    todo: 'icon-url.ts:safeIconUrl drops localhost but keeps http://app.localhost/… (and app.localhost.), which browsers resolve to 127.0.0.1 (RFC 6761): a seller lists an icon that makes every catalogue visitor request its own machine. Fix: drop hosts equal to or ending in ".localhost" (after the trailing-dot strip)',
  }, () => {
    assert.deepEqual(['http://app.localhost/i.png', 'http://a.localhost./i.png'].map(safeIconUrl), [
      null,
      null,
    ]);
  });
});
