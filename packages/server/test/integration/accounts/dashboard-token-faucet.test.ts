import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions } from 'fastify';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { type DashboardApp, startDashboardApp } from '../../support/dashboard-app.ts';
import { startTestChain, type TestChain } from '../../support/test-localnet.ts';

interface Browser {
  readonly cookie: string;
  readonly csrf: string;
}

/**
 * The dashboard's wallets page, through its API as the page calls it: token balances with symbol and
 * decimals, and the "Faucet USDC" button of a local chain, for the account's own wallets only.
 */
describe('dashboard wallets: token balances and the token faucet', () => {
  let chain: TestChain;
  let gw: DashboardApp;
  let alice: Browser;
  let bob: Browser;
  let wallet: string;

  const as = (browser: Browser, options: InjectOptions): InjectOptions => ({
    ...options,
    headers: { cookie: browser.cookie, 'x-csrf-token': browser.csrf },
  });
  const signUp = async (email: string): Promise<Browser> => {
    const res = await gw.app.inject({
      method: 'POST',
      url: '/dashboard/api/signup',
      payload: { email, password: 'correct horse battery' },
    });
    assert.equal(res.statusCode, 200, res.body);
    return { cookie: String(res.headers['set-cookie']).split(';')[0] ?? '', csrf: res.json().csrfToken };
  };
  const faucet = (browser: Browser, address: string, payload?: object) =>
    gw.app.inject(
      as(browser, {
        method: 'POST',
        url: `/dashboard/api/wallets/${address}/faucet`,
        ...(payload === undefined ? {} : { payload }),
      }),
    );
  const wallets = async (browser: Browser) =>
    (await gw.app.inject(as(browser, { method: 'GET', url: '/dashboard/api/wallets' }))).json().wallets;

  before(async () => {
    chain = await startTestChain();
    gw = await startDashboardApp({ networks: new NetworkRegistry([chain.adapter]) });
    alice = await signUp('alice@example.test');
    bob = await signUp('bob@example.test');
    const created = await gw.app.inject(
      as(alice, { method: 'POST', url: '/dashboard/api/wallets', payload: { chain: 'solana' } }),
    );
    wallet = created.json().address;
  });
  after(async () => {
    await gw.close();
    await chain.close();
  });

  it('offers the local chain’s tokens to mint, shows none held, then 100 USDC with its decimals after one press', async () => {
    const [before] = await wallets(alice);
    assert.deepEqual(before.faucetTokens, ['USDC']);
    assert.deepEqual(before.tokens, []);
    const funded = await faucet(alice, wallet, { token: 'usdc' });
    assert.equal(funded.statusCode, 200, funded.body);
    assert.equal(funded.json().amount, 100);
    assert.equal(funded.json().currency, 'USDC');
    const [after] = await wallets(alice);
    assert.deepEqual(after.tokens, [
      {
        symbol: 'USDC',
        address: chain.localnet.usdcMint.address,
        decimals: 6,
        balance: 100,
        amount: '100000000',
      },
    ]);
    assert.equal(after.balance, 0, 'the native balance is untouched');
  });

  it('refuses a token the chain does not have, naming `token`, and another account’s wallet, minting nothing', async () => {
    const unknown = await faucet(alice, wallet, { token: 'DOGE' });
    assert.equal(unknown.statusCode, 400, unknown.body);
    assert.match(unknown.json().error.details.token, /is not a known token .*known: USDC/);
    const foreign = await faucet(bob, wallet, { token: 'USDC' });
    assert.equal(foreign.statusCode, 403, foreign.body);
    for (const body of [{ token: 'USDC', amount: 1_000_000 }, { token: 7 }, { token: '' }]) {
      const bad = await faucet(alice, wallet, body);
      assert.equal(bad.statusCode, 400, bad.body);
      assert.equal(bad.json().error.details.token, 'must be a token symbol, such as USDC');
    }
    const [now] = await wallets(alice);
    assert.equal(now.tokens[0].amount, '100000000');
  });
});
