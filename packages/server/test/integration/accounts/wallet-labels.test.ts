import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { generateSolanaKeypair } from '../../../src/chains/solana/solana-keypair.ts';
import { type DashboardApp, startDashboardApp } from '../../support/dashboard-app.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { signChallenge, watchAddress } from '../../support/proof-of-control.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

const storages: { name: string; skip: string | false; make(): Promise<TempStorage> }[] = [
  { name: 'SQLite', skip: false, make: async () => tempSqlite() },
  { name: 'PostgreSQL', skip: SKIP_POSTGRES, make: tempPostgres },
];

interface ListedWallet {
  address: string;
  chain: string;
  watchOnly: boolean;
  label: string | null;
}

/**
 * Wallet labels (#30): the account's name for a wallet, set when it is created or registered and by
 * PATCH /wallets/{address}, listed with it. At most 64 characters once trimmed, no control characters;
 * another account's wallet is 404 exactly as no wallet, and its label is never changed.
 */
for (const storage of storages) {
  describe(`wallet labels on ${storage.name}`, { skip: storage.skip }, () => {
    let gw: TestGateway;
    let alice: string;
    let bob: string;

    const post = (key: string, url: string, payload: unknown) =>
      gw.app.inject({ method: 'POST', url, headers: bearer(key), payload: payload as object });
    const patch = (key: string, address: string, payload: unknown) =>
      gw.app.inject({
        method: 'PATCH',
        url: `/wallets/${encodeURIComponent(address)}`,
        headers: bearer(key),
        payload: payload as object,
      });
    const listed = async (key: string): Promise<ListedWallet[]> => {
      const res = await gw.app.inject({ method: 'GET', url: '/wallets', headers: bearer(key) });
      assert.equal(res.statusCode, 200, res.body);
      return res.json().wallets;
    };
    const labelOf = async (key: string, address: string) =>
      (await listed(key)).find((w) => w.address === address)?.label;
    const create = async (key: string, body: object): Promise<ListedWallet> => {
      const res = await post(key, '/wallets', body);
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    };
    /** A refusal naming exactly `field` (spec §7 error body). */
    const refusedNaming = (res: LightMyRequestResponse, field: string) => {
      assert.equal(res.statusCode, 400, res.body);
      const body = res.json();
      assert.equal(body.success, false);
      assert.equal(body.error.code, 'INVALID_PARAMETERS');
      assert.deepEqual(Object.keys(body.error.details), [field], res.body);
    };

    before(async () => {
      gw = await startTestGateway({ storage: await storage.make() });
      alice = (await gw.newCaller('premium')).key;
      bob = (await gw.newCaller('premium')).key;
    });
    after(() => gw?.close());

    it('takes a label when a custodial wallet is created, trimmed, and lists it; none is null', async () => {
      const till = await create(alice, { chain: 'solana', label: '  Shop till  ' });
      assert.equal(till.label, 'Shop till');
      const plain = await create(alice, { chain: 'evm' });
      assert.equal(plain.label, null);
      const wallets = await listed(alice);
      assert.equal(wallets.find((w) => w.address === till.address)?.label, 'Shop till');
      assert.equal(wallets.find((w) => w.address === plain.address)?.label, null);
    });

    it('takes a label when a watch-only address is registered on proof of control', async () => {
      const key = generateSolanaKeypair();
      const res = await watchAddress(gw, alice, key, {});
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().label, null);
      const labelled = generateSolanaKeypair();
      const challenge = await post(alice, '/wallets/challenge', {
        chain: 'solana',
        address: labelled.address,
      });
      assert.equal(challenge.statusCode, 200, challenge.body);
      // The same door with a label (watchAddress sends none): the challenge signed here.
      const text = challenge.json().challenge as string;
      const watched = await post(alice, '/wallets', {
        chain: 'solana',
        address: labelled.address,
        watchOnly: true,
        challenge: text,
        signature: await signChallenge(labelled, text),
        label: 'Cold storage',
      });
      assert.equal(watched.statusCode, 200, watched.body);
      assert.equal(watched.json().label, 'Cold storage');
      assert.equal(watched.json().watchOnly, true);
      assert.equal(await labelOf(alice, labelled.address), 'Cold storage');
    });

    it('sets, renames and clears a label with PATCH /wallets/{address}, any spelling of an EVM address', async () => {
      const evm = await create(alice, { chain: 'evm' });
      const set = await patch(alice, evm.address.toLowerCase(), { label: 'Ops float' });
      assert.equal(set.statusCode, 200, set.body);
      assert.deepEqual(set.json(), { ...evm, label: 'Ops float' });
      assert.equal(await labelOf(alice, evm.address), 'Ops float');
      // 64 characters (code points, an emoji is one), not bytes; white space around is not counted.
      const longest = `${'🙂'.repeat(32)}${'é'.repeat(32)}`;
      const renamed = await patch(alice, evm.address, { label: ` ${longest}\t` });
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.equal(renamed.json().label, longest);
      for (const cleared of [null, '', '   ']) {
        await patch(alice, evm.address, { label: 'again' });
        const res = await patch(alice, evm.address, { label: cleared });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json().label, null, JSON.stringify(cleared));
        assert.equal(await labelOf(alice, evm.address), null);
      }
    });

    it('refuses a label that breaks the rule naming `label`, and keeps the one it had', async () => {
      const wallet = await create(alice, { chain: 'solana', label: 'Kept' });
      const bad: unknown[] = [
        'x'.repeat(65),
        `${'🙂'.repeat(65)}`,
        'line\nbreak',
        'tab\tinside',
        'nul\u0000',
        'escape\u001b[31m',
        'c1\u0085',
        'bidi\u202Egnp.exe',
        'isolate\u2066x',
        42,
        true,
        { text: 'no' },
        ['no'],
      ];
      for (const label of bad) {
        refusedNaming(await patch(alice, wallet.address, { label }), 'label');
      }
      refusedNaming(await patch(alice, wallet.address, {}), 'label');
      assert.equal(await labelOf(alice, wallet.address), 'Kept');
      // At creation too: nothing is created.
      const before = (await listed(alice)).length;
      refusedNaming(await post(alice, '/wallets', { chain: 'solana', label: 'x'.repeat(65) }), 'label');
      refusedNaming(await post(alice, '/wallets', { chain: 'evm', label: 'a\rb' }), 'label');
      assert.equal((await listed(alice)).length, before);
    });

    it("answers another account's wallet exactly as no wallet (404), and never changes or shows its label", async () => {
      const mine = await create(alice, { chain: 'solana', label: 'Alice till' });
      const nobody = generateSolanaKeypair().address;
      const foreign = await patch(bob, mine.address, { label: 'Bob was here' });
      const missing = await patch(bob, nobody, { label: 'Bob was here' });
      assert.equal(foreign.statusCode, 404, foreign.body);
      assert.equal(missing.statusCode, 404, missing.body);
      const shape = (res: LightMyRequestResponse, address: string) => {
        const { error } = res.json();
        return {
          code: error.code,
          message: error.message.replace(address, 'ADDRESS'),
          details: error.details,
        };
      };
      assert.deepEqual(shape(foreign, mine.address), shape(missing, nobody));
      assert.equal(shape(foreign, mine.address).code, 'WALLET_NOT_FOUND');
      // Clearing it is refused alike.
      assert.equal((await patch(bob, mine.address, { label: null })).statusCode, 404);
      assert.equal(await labelOf(alice, mine.address), 'Alice till');
      const bobs = await listed(bob);
      assert.ok(!bobs.some((w) => w.address === mine.address || w.label === 'Alice till'));
      // Without a key, nothing at all.
      const anonymous = await gw.app.inject({
        method: 'PATCH',
        url: `/wallets/${mine.address}`,
        payload: { label: 'x' },
      });
      assert.equal(anonymous.statusCode, 401);
    });

    it('refuses what is not an address naming `address`', async () => {
      refusedNaming(await patch(alice, 'not-an-address', { label: 'x' }), 'address');
    });
  });
}

/** The dashboard's door to the same rule (its Wallets page), with a session instead of a key. */
describe('wallet labels through the dashboard API', () => {
  let gw: DashboardApp;
  const signUp = async (email: string) => {
    const res = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/signup',
      payload: { email, password: 'a long enough password' },
    });
    assert.equal(res.statusCode, 200, res.body);
    const cookie = String(res.headers['set-cookie']).split(';')[0] ?? '';
    return { cookie, 'x-csrf-token': res.json().csrfToken as string };
  };
  const call = (
    headers: Record<string, string>,
    method: 'GET' | 'POST' | 'PATCH',
    url: string,
    payload?: object,
  ) =>
    gw.app.inject({
      method,
      url: `/dashboard/api${url}`,
      headers,
      ...(payload === undefined ? {} : { payload }),
    });

  before(async () => {
    gw = await startDashboardApp();
  });
  after(() => gw?.close());

  it("labels the session's own wallet, refuses a bad label naming it, and answers another account's wallet 404", async () => {
    const alice = await signUp('alice-labels@example.test');
    const bob = await signUp('bob-labels@example.test');
    const created = await call(alice, 'POST', '/wallets', { chain: 'solana', label: 'Till' });
    assert.equal(created.statusCode, 200, created.body);
    const address = created.json().address as string;
    const renamed = await call(alice, 'PATCH', `/wallets/${address}`, { label: ' Front desk ' });
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.equal(renamed.json().label, 'Front desk');
    const bad = await call(alice, 'PATCH', `/wallets/${address}`, { label: 'two\nlines' });
    assert.equal(bad.statusCode, 400, bad.body);
    assert.deepEqual(Object.keys(bad.json().error.details), ['label']);
    const foreign = await call(bob, 'PATCH', `/wallets/${address}`, { label: 'Bob' });
    assert.equal(foreign.statusCode, 404, foreign.body);
    assert.equal(foreign.json().error.code, 'WALLET_NOT_FOUND');
    // Without the CSRF token nothing changes either.
    const forged = await call({ cookie: alice.cookie }, 'PATCH', `/wallets/${address}`, { label: 'Forged' });
    assert.equal(forged.statusCode, 403, forged.body);
    const listed = (await call(alice, 'GET', '/wallets')).json().wallets as { label: string | null }[];
    assert.deepEqual(
      listed.map((w) => w.label),
      ['Front desk'],
    );
    assert.deepEqual((await call(bob, 'GET', '/wallets')).json().wallets, []);
  });
});
