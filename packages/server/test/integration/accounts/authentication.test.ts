import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashApiKey } from '../../../src/domain/api-key.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

const UNAUTHORIZED_BODY = { code: 'UNAUTHORIZED', message: 'API key missing or invalid.' };

describe('authentication (spec §5)', () => {
  let gw: TestGateway;
  let valid: { accountId: string; key: string };

  before(async () => {
    gw = await startTestGateway();
    valid = await gw.newCaller('standard');
  });
  after(() => gw.close());

  const refused: [string, Record<string, string>][] = [
    ['no Authorization header', {}],
    ['an empty header', { authorization: '' }],
    ['a scheme other than Bearer', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['Bearer with no key', { authorization: 'Bearer ' }],
    ['a malformed key', { authorization: 'Bearer not-a-key' }],
    ['a well-formed unknown key', { authorization: `Bearer g402_sk_${'A'.repeat(43)}` }],
    ['a key with a trailing extra', { authorization: `Bearer g402_sk_${'A'.repeat(43)} x` }],
  ];
  for (const [what, headers] of refused) {
    it(`answers 401 UNAUTHORIZED for ${what}, saying nothing about which`, async () => {
      const res = await gw.app.inject({ method: 'GET', url: '/account', headers });
      assert.equal(res.statusCode, 401);
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="gate402"');
      const body = res.json();
      assert.equal(body.success, false);
      assert.deepEqual({ code: body.error.code, message: body.error.message }, UNAUTHORIZED_BODY);
      assert.equal(res.headers.ratelimit, undefined, 'unauthenticated requests get no rate headers');
    });
  }

  it('accepts a valid key, with the scheme in any case', async () => {
    const res = await gw.app.inject({
      method: 'GET',
      url: '/account',
      headers: { authorization: `bearer ${valid.key}` },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().id, valid.accountId);
  });

  it('refuses a revoked key with the same 401, while the account’s other key keeps working', async () => {
    const { key: other } = await gw.accounts.createKey(valid.accountId, 'rotation');
    const keys = await gw.accounts.listKeys(valid.accountId);
    const old = keys.find((k) => k.name === 'test');
    assert.ok(old);
    await gw.accounts.revokeKey(old.id);
    const res = await gw.app.inject({ method: 'GET', url: '/account', headers: bearer(valid.key) });
    assert.equal(res.statusCode, 401);
    assert.deepEqual({ code: res.json().error.code, message: res.json().error.message }, UNAUTHORIZED_BODY);
    const ok = await gw.app.inject({ method: 'GET', url: '/account', headers: bearer(other) });
    assert.equal(ok.statusCode, 200);
    valid = { accountId: valid.accountId, key: other };
  });

  it("authenticates from a key's SHA-256 as from the key (what an open stream keeps), and not once it is revoked", async () => {
    const caller = await gw.newCaller('premium');
    const digest = hashApiKey(caller.key);
    const found = await gw.accounts.authenticateDigest(digest);
    assert.equal(found?.account.id, caller.accountId);
    assert.equal((await gw.accounts.authenticate(caller.key))?.key.id, found?.key.id);
    await gw.accounts.revokeKey(found?.key.id ?? '');
    assert.equal(await gw.accounts.authenticateDigest(digest), undefined);
    assert.equal(await gw.accounts.authenticateDigest(hashApiKey(`${caller.key}x`)), undefined);
  });

  it('records when a key was last used', async () => {
    const caller = await gw.newCaller();
    const [before] = await gw.accounts.listKeys(caller.accountId);
    assert.equal(before?.lastUsedAt, null);
    const started = Date.now();
    await gw.app.inject({ method: 'GET', url: '/account', headers: bearer(caller.key) });
    const [afterUse] = await gw.accounts.listKeys(caller.accountId);
    assert.ok(afterUse?.lastUsedAt !== null && (afterUse?.lastUsedAt ?? 0) >= started);
  });

  it('leaves health, OpenAPI and docs open', async () => {
    for (const url of ['/healthz', '/readyz', '/openapi.json', '/docs']) {
      const res = await gw.app.inject({ method: 'GET', url });
      assert.ok(res.statusCode === 200 || res.statusCode === 302, `${url} answered ${res.statusCode}`);
    }
  });

  it('stores keys only as hashes: the secret appears nowhere in storage', async () => {
    const caller = await gw.newCaller();
    const [record] = await gw.store.apiKeys.listByAccount(caller.accountId);
    assert.ok(record);
    assert.ok(!JSON.stringify(record).includes(caller.key.slice(12)));
    assert.equal(record.displayPrefix, caller.key.slice(0, 12));
    assert.match(caller.key, /^g402_sk_[A-Za-z0-9_-]{43}$/);
  });
});

describe('authentication cache', () => {
  it('serves a key from cache for AUTH_CACHE_MS, but a revocation through the service applies at once', async () => {
    let now = 1_000_000;
    const { startTestGateway: start } = await import('../../support/test-gateway.ts');
    const gw = await start({ authCacheMs: 1_000, now: () => now });
    try {
      const caller = await gw.newCaller();
      const first = await gw.app.inject({ method: 'GET', url: '/account', headers: bearer(caller.key) });
      assert.equal(first.statusCode, 200);
      // A revocation written by another process (straight to storage) is seen once the entry is older than the TTL.
      const [record] = await gw.store.apiKeys.listByAccount(caller.accountId);
      assert.ok(record);
      await gw.store.apiKeys.revoke(record.id, now);
      assert.equal(
        (await gw.app.inject({ method: 'GET', url: '/account', headers: bearer(caller.key) })).statusCode,
        200,
      );
      now += 1_000;
      assert.equal(
        (await gw.app.inject({ method: 'GET', url: '/account', headers: bearer(caller.key) })).statusCode,
        401,
      );

      const other = await gw.newCaller();
      await gw.app.inject({ method: 'GET', url: '/account', headers: bearer(other.key) });
      const [otherKey] = await gw.accounts.listKeys(other.accountId);
      assert.ok(otherKey);
      await gw.accounts.revokeKey(otherKey.id);
      assert.equal(
        (await gw.app.inject({ method: 'GET', url: '/account', headers: bearer(other.key) })).statusCode,
        401,
      );
    } finally {
      await gw.close();
    }
  });
});
