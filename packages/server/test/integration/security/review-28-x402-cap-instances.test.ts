import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { getAddress } from 'viem';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { callAs } from '../../support/api-caller.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres } from '../../support/databases.ts';
import { startTestEvm, type TestEvm } from '../../support/test-anvil.ts';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.ts';

/** 0.01 USDC, the price of each payment. */
const PRICE = 10_000n;

/**
 * Review of #28: a burst of POST /payment/x402 payments by two API keys of one account, through two
 * gateway instances on one PostgreSQL database, against an account daily cap one atomic unit short of
 * six payments: exactly five are signed and recorded, every other is 403 SPEND_LIMIT_EXCEEDED, and the
 * account's history holds five.
 */
describe('review #28: x402 payments at a daily cap across two instances on PostgreSQL', {
  skip: SKIP_POSTGRES,
  timeout: 180_000,
}, () => {
  let storage: TempStorage;
  let evm: TestEvm;
  let gws: TestGateway[];
  let keys: string[];
  let wallet: string;

  before(async () => {
    [storage, evm] = await Promise.all([tempPostgres(), startTestEvm()]);
    const masterKey = randomBytes(32);
    const networks = () => new NetworkRegistry([evm.adapter]);
    gws = [
      await startTestGateway({ storage, masterKey, networks: networks(), disposeStorage: false }),
      await startTestGateway({ storage, masterKey, networks: networks(), disposeStorage: false }),
    ];
    for (const gw of gws) await gw.services.facilitator.start();
    const [gw1] = gws as [TestGateway];
    const caller = await gw1.newCaller('standard');
    const second = await gw1.accounts.createKey(caller.accountId, 'second');
    keys = [caller.key, second.key];
    wallet = (await callAs(gw1, caller.key, 'POST', '/wallets', { chain: 'evm' })).body.address as string;
    const funded = await callAs(gw1, caller.key, 'POST', '/faucet', {
      address: wallet,
      amount: 1,
      token: 'USDC',
    });
    assert.equal(funded.status, 200, JSON.stringify(funded.body));
    const at = Date.now();
    await gw1.store.spending.putPolicy({
      accountId: caller.accountId,
      keyId: null,
      limits: [
        {
          network: evm.adapter.info.id,
          asset: getAddress(evm.usdc.address),
          symbol: 'USDC',
          decimals: 6,
          maxPerPayment: null,
          maxPerDay: 6n * PRICE - 1n,
        },
      ],
      allowedRecipients: null,
      allowedHosts: null,
      allowedNetworks: null,
      expiresAt: null,
      createdAt: at,
      updatedAt: at,
    });
  });
  after(async () => {
    for (const gw of gws ?? []) await gw.close();
    await evm?.close();
    evm?.dispose();
    await storage?.dispose();
  });

  it('pays exactly the cap, no atomic unit more', async () => {
    const payTo = getAddress(`0x${randomBytes(20).toString('hex')}`);
    const url = 'https://seller.example/report';
    const challenge = {
      x402Version: 2,
      resource: { url },
      accepts: [
        {
          scheme: 'exact',
          network: evm.adapter.info.id,
          asset: evm.usdc.address,
          payTo,
          amount: PRICE.toString(),
          maxTimeoutSeconds: 60,
          extra: { name: 'USD Coin', version: '2' },
        },
      ],
    };
    const header = Buffer.from(JSON.stringify(challenge)).toString('base64');
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        callAs(gws[i % 2] as TestGateway, keys[Math.floor(i / 2) % 2] as string, 'POST', '/payment/x402', {
          walletAddress: wallet,
          paymentRequired: header,
          resource: url,
          maxAmount: { USDC: 1 },
        }),
      ),
    );
    const paid = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status !== 200);
    for (const r of refused) {
      assert.equal(r.status, 403, JSON.stringify(r.body));
      assert.equal(r.body.error.code, 'SPEND_LIMIT_EXCEEDED', JSON.stringify(r.body));
    }
    assert.equal(paid.length, 5, JSON.stringify(answers.map((a) => a.status)));
    const history = await callAs(
      gws[1] as TestGateway,
      keys[1] as string,
      'GET',
      `/payment/history/${wallet}?type=sent`,
    );
    assert.equal(history.body.total, 5);
  });
});
