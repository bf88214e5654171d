import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { generateSolanaKeypair } from '../../src/chains/solana/solana-keypair.ts';
import { type DashboardApp, startDashboardApp } from '../support/dashboard-app.ts';
import { newEvmLocalWallet } from '../support/evm-local-signer.ts';
import { type AddressKey, chainOf, signChallenge } from '../support/proof-of-control.ts';

/** The dashboard registers watch-only addresses with the same proof of control as the API. */
describe('Dashboard: watch-only wallets on proof of control', () => {
  let gw: DashboardApp;
  let signups = 0;

  before(async () => {
    gw = await startDashboardApp();
  });
  after(() => gw.close());

  /** A signed-up person's session: POST as them (cookie and CSRF token). */
  const person = async () => {
    const res = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/signup',
      payload: { email: `watcher${++signups}@example.com`, password: 'correct horse battery staple' },
    });
    assert.equal(res.statusCode, 200, res.body);
    const header = res.headers['set-cookie'];
    const cookie = ((Array.isArray(header) ? header[0] : header) ?? '').split(';')[0] ?? '';
    const headers = { cookie, 'x-csrf-token': res.json().csrfToken as string };
    return {
      post: (url: string, payload: object): Promise<LightMyRequestResponse> =>
        gw.app.inject({ method: 'POST', url: `/dashboard/api${url}`, headers, payload }),
      get: (url: string) => gw.app.inject({ method: 'GET', url: `/dashboard/api${url}`, headers }),
    };
  };

  for (const key of [generateSolanaKeypair(), newEvmLocalWallet()] as AddressKey[]) {
    const chain = chainOf(key);
    it(`${chain}: shows a challenge, takes the signature, lists the address as watch-only`, async () => {
      const me = await person();
      const spelled = chain === 'evm' ? key.address.toLowerCase() : key.address;
      const issued = await me.post('/wallets/challenge', { chain, address: spelled });
      assert.equal(issued.statusCode, 200, issued.body);
      const { challenge, address } = issued.json();
      assert.equal(address, key.address, 'canonical spelling');
      assert.match(challenge, /gate402/);

      const unsigned = await me.post('/wallets', { chain, address: spelled, watchOnly: true, challenge });
      assert.equal(unsigned.statusCode, 400, unsigned.body);
      assert.equal(
        unsigned.json().error.details.signature,
        "is required for a watch-only wallet: the address's signature of the challenge",
      );
      const forged = await me.post('/wallets', {
        chain,
        address: spelled,
        watchOnly: true,
        challenge,
        signature: await signChallenge(
          chain === 'evm' ? newEvmLocalWallet() : generateSolanaKeypair(),
          challenge,
        ),
      });
      assert.equal(forged.json().error.code, 'INVALID_SIGNATURE', forged.body);

      const registered = await me.post('/wallets', {
        chain,
        address: spelled,
        watchOnly: true,
        challenge,
        signature: await signChallenge(key, challenge),
      });
      assert.equal(registered.statusCode, 200, registered.body);
      const listed = (await me.get('/wallets')).json().wallets;
      assert.deepEqual(
        listed.map((w: { address: string; watchOnly: boolean }) => [w.address, w.watchOnly]),
        [[key.address, true]],
      );

      const other = await person();
      const taken = await other.post('/wallets/challenge', { chain, address: spelled });
      assert.equal(taken.statusCode, 409, taken.body);
      assert.equal(taken.json().error.code, 'WALLET_ALREADY_REGISTERED');
    });
  }

  it('refuses a challenge or signature without watchOnly: a custodial wallet imports nothing', async () => {
    const me = await person();
    const res = await me.post('/wallets', { chain: 'solana', signature: 'x' });
    assert.equal(res.statusCode, 400);
    assert.deepEqual(res.json().error.details, { signature: 'is only accepted with watchOnly: true' });
  });
});
