import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { atomicToDecimalText } from '../../../src/domain/money.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { startEvmPaymentFixture } from '../../support/evm-payment-fixture.ts';
import { type FamilyPaymentFixture, onEvm, onSolana } from '../../support/family-fixtures.ts';
import type { Party } from '../../support/party.ts';
import { startPaymentFixture } from '../../support/payment-fixture.ts';
import { bearer } from '../../support/test-gateway.ts';

/**
 * Spend policies enforced by the gateway (#28 part 3), through the HTTP API on a real chain and a real
 * store: admin-scoped keys set them, every custodial spend is held to them, and bursts of concurrent
 * sends at a daily cap get exactly the room there is, on both chain families and both stores.
 */
interface Setup {
  readonly name: string;
  readonly skip: string | false;
  start(): Promise<{ f: FamilyPaymentFixture; close(): Promise<void> }>;
  /** The same address spelled another way the API must take as it (EVM: lower case), or undefined. */
  sameAddress(address: string): string | undefined;
  /** An address that differs from `address` only in letter case and is another account (Solana), or undefined. */
  otherAddressByCase(address: string): string | undefined;
}

const storages: { name: string; skip: string | false; make(): Promise<TempStorage> }[] = [
  { name: 'SQLite', skip: false, make: async () => tempSqlite() },
  { name: 'PostgreSQL', skip: SKIP_POSTGRES, make: tempPostgres },
];

const setups: Setup[] = storages.flatMap((storage) => [
  {
    name: `Solana localnet, ${storage.name}`,
    skip: storage.skip,
    start: async () => {
      const raw = await startPaymentFixture({ gateway: { storage: await storage.make() } });
      return { f: onSolana(raw), close: () => raw.close() };
    },
    sameAddress: () => undefined,
    otherAddressByCase: (address) => {
      const swapped = [...address].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()));
      const other = swapped.join('');
      return other === address ? undefined : other;
    },
  },
  {
    name: `anvil, ${storage.name}`,
    skip: storage.skip,
    start: async () => {
      const raw = await startEvmPaymentFixture({ gateway: { storage: await storage.make() } });
      return { f: onEvm(raw), close: () => raw.close() };
    },
    sameAddress: (address) => address.toLowerCase(),
    otherAddressByCase: () => undefined,
  },
]);

for (const setup of setups) {
  describe(`spend policies on ${setup.name}`, { skip: setup.skip }, () => {
    let f: FamilyPaymentFixture;
    let close: () => Promise<void>;
    let seller: Party;
    /** One payment's amount: 0.001 of the native currency, in atomic units. */
    let one: bigint;

    before(async () => {
      ({ f, close } = await setup.start());
      seller = await f.party();
      one = 10n ** BigInt(f.native.decimals - 3);
    });
    after(() => close());

    const decimal = (atomic: bigint) => atomicToDecimalText(atomic, f.native.decimals);
    const put = (key: string, url: string, payload: object) =>
      f.gw.app.inject({ method: 'PUT', url, headers: bearer(key), payload });
    const del = (key: string, url: string) =>
      f.gw.app.inject({ method: 'DELETE', url, headers: bearer(key) });
    const send = (
      key: string,
      wallet: string,
      body: Record<string, unknown>,
      headers?: Record<string, string>,
    ) => f.post(key, '/payment/send', { walletAddress: wallet, amount: 0.001, ...body }, headers);

    /** A funded buyer account with its ordinary key, an admin key and a second ordinary key. */
    async function buyer(fund = 1000n * one) {
      const party = await f.party(fund, 'premium');
      const admin = await f.gw.accounts.createKey(party.accountId, 'admin', ['admin']);
      const second = await f.gw.accounts.createKey(party.accountId, 'agent 2');
      const keyId = (await f.gw.accounts.listKeys(party.accountId)).find((k) => k.name === 'test')?.id;
      assert.ok(keyId !== undefined);
      return { ...party, admin: admin.key, second: second.key, keyId, secondId: second.record.id };
    }

    it('answers a burst of 20 concurrent sends by two keys against an account cap one unit short of all 20: exactly 19 pay', async () => {
      const b = await buyer();
      const cap = 20n * one - 1n;
      const set = await put(b.admin, '/spend-policies/account', {
        limits: [{ network: f.network, maxPerDay: decimal(cap) }],
      });
      assert.equal(set.statusCode, 200, set.body);
      assert.equal(set.json().limits[0].maxPerDay, decimal(cap));
      const sends = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          send(i % 2 === 0 ? b.key : b.second, b.wallet, { recipientAddress: seller.wallet }),
        ),
      );
      const paid = sends.filter((r) => r.statusCode === 200);
      const refused = sends.filter((r) => r.statusCode === 403);
      assert.deepEqual([paid.length, refused.length], [19, 1], sends.map((r) => r.body).join('\n'));
      const error = refused[0]?.json().error;
      assert.equal(error.code, 'SPEND_LIMIT_EXCEEDED');
      assert.equal(error.details.limit, 'maxPerDay');
      assert.equal(error.details.policy, 'account');
      assert.equal(error.details.remaining, `${decimal(one - 1n)} ${f.native.symbol}`);
      // The refused one recorded nothing: the history has the 19 paid ones only.
      const history = (await f.get(b.key, `/payment/history/${b.wallet}?limit=100`)).json();
      assert.equal(history.total, 19);
      // What is left is one unit short of a payment: a payment of exactly that much still fits.
      const own = (await f.get(b.key, '/spend-policy')).json();
      assert.deepEqual(own.daily, [
        {
          scope: 'account',
          network: f.network,
          asset: f.native.symbol,
          maxPerDay: decimal(cap),
          spent: decimal(19n * one),
          remaining: decimal(one - 1n),
        },
      ]);
    });

    it('answers a burst of 10 concurrent local-mode builds against a key cap one unit short of all 10: exactly 9 are built', async () => {
      const b = await buyer();
      const set = await put(b.admin, `/spend-policies/keys/${b.keyId}`, {
        limits: [{ network: f.network, maxPerDay: decimal(10n * one - 1n) }],
      });
      assert.equal(set.statusCode, 200, set.body);
      const builds = await Promise.all(
        Array.from({ length: 10 }, () =>
          f.post(b.key, '/transaction/send', {
            walletAddress: b.wallet,
            recipientAddress: seller.wallet,
            amount: 0.001,
          }),
        ),
      );
      assert.deepEqual(
        builds.map((r) => r.statusCode).sort(),
        [200, 200, 200, 200, 200, 200, 200, 200, 200, 403],
        builds.map((r) => r.body).join('\n'),
      );
      const refused = builds.find((r) => r.statusCode === 403)?.json().error;
      assert.equal(refused.code, 'SPEND_LIMIT_EXCEEDED');
      assert.equal(refused.details.policy, 'key');
      assert.equal(refused.details.remaining, `${decimal(one - 1n)} ${f.native.symbol}`);
    });

    it("holds a key to its own daily cap and maxPerPayment, apart from the account's other key", async () => {
      const b = await buyer();
      const set = await put(b.admin, `/spend-policies/keys/${b.keyId}`, {
        limits: [
          {
            network: f.network,
            asset: f.native.symbol,
            maxPerPayment: decimal(one),
            maxPerDay: decimal(3n * one),
          },
        ],
      });
      assert.equal(set.statusCode, 200, set.body);
      const above = await send(b.key, b.wallet, {
        recipientAddress: seller.wallet,
        amount: Number(decimal(one + 1n)),
      });
      // 0.001000000000000001 ETH is not a JSON number a double can hold; on EVM the amount bound refuses it.
      if (f.native.decimals <= 15) {
        assert.equal(above.statusCode, 403, above.body);
        assert.equal(above.json().error.code, 'SPEND_LIMIT_EXCEEDED');
        assert.equal(above.json().error.details.limit, 'maxPerPayment');
        assert.equal(above.json().error.details.policy, 'key');
      }
      const atMax = await send(b.key, b.wallet, { recipientAddress: seller.wallet, amount: 0.001 });
      assert.equal(atMax.statusCode, 200, atMax.body);
      const burst = await Promise.all(
        Array.from({ length: 5 }, () => send(b.key, b.wallet, { recipientAddress: seller.wallet })),
      );
      assert.deepEqual(burst.map((r) => r.statusCode).sort(), [200, 200, 403, 403, 403]);
      // The other key of the account is not bound by this key's policy.
      const other = await send(b.second, b.wallet, { recipientAddress: seller.wallet, amount: 0.002 });
      assert.equal(other.statusCode, 200, other.body);
    });

    it('refuses a recipient not in the allow-list, and takes the same address spelled otherwise', async () => {
      const b = await buyer();
      const stranger = await f.party();
      const set = await put(b.admin, '/spend-policies/account', { allowedRecipients: [seller.wallet] });
      assert.equal(set.statusCode, 200, set.body);
      const refused = await send(b.key, b.wallet, { recipientAddress: stranger.wallet });
      assert.equal(refused.statusCode, 403, refused.body);
      assert.equal(refused.json().error.code, 'SPEND_NOT_ALLOWED');
      assert.equal(refused.json().error.details.limit, 'allowedRecipients');
      assert.equal((await send(b.key, b.wallet, { recipientAddress: seller.wallet })).statusCode, 200);
      const same = setup.sameAddress(seller.wallet);
      if (same !== undefined) {
        const res = await send(b.key, b.wallet, { recipientAddress: same });
        assert.equal(res.statusCode, 200, res.body);
      }
      const other = setup.otherAddressByCase(seller.wallet);
      if (other !== undefined) {
        const res = await send(b.key, b.wallet, { recipientAddress: other });
        assert.ok(res.statusCode === 403 || res.statusCode === 400, res.body);
        assert.notEqual(res.statusCode, 200);
      }
    });

    it('refuses every spend under an expired policy, and any asset a policy with limits does not list', async () => {
      const b = await buyer();
      const expired = await put(b.admin, `/spend-policies/keys/${b.keyId}`, {
        expiresAt: new Date(Date.now() - 1000).toISOString(),
      });
      assert.equal(expired.statusCode, 200, expired.body);
      const res = await send(b.key, b.wallet, { recipientAddress: seller.wallet });
      assert.equal(res.statusCode, 403, res.body);
      assert.equal(res.json().error.code, 'SPEND_POLICY_EXPIRED');
      const none = await put(b.admin, `/spend-policies/keys/${b.keyId}`, { limits: [] });
      assert.equal(none.statusCode, 200, none.body);
      const unlisted = await send(b.key, b.wallet, { recipientAddress: seller.wallet });
      assert.equal(unlisted.statusCode, 403, unlisted.body);
      assert.equal(unlisted.json().error.code, 'SPEND_NOT_ALLOWED');
      assert.equal(unlisted.json().error.details.limit, 'limits');
      // Removed, the key spends again.
      assert.equal((await del(b.admin, `/spend-policies/keys/${b.keyId}`)).statusCode, 200);
      assert.equal((await send(b.key, b.wallet, { recipientAddress: seller.wallet })).statusCode, 200);
    });

    it('lets no ordinary key set or read policies, and no admin key of another account see this one', async () => {
      const b = await buyer();
      const raise = await put(b.key, `/spend-policies/keys/${b.keyId}`, {
        limits: [{ network: f.network, maxPerDay: '1000000' }],
      });
      assert.equal(raise.statusCode, 403, raise.body);
      assert.equal(raise.json().error.code, 'FORBIDDEN');
      assert.equal((await f.get(b.key, '/spend-policies')).statusCode, 403);
      assert.equal((await del(b.key, '/spend-policies/account')).statusCode, 403);
      // Another account's admin key: this account's key is not found, as one that does not exist.
      const intruder = await buyer();
      const foreign = await put(intruder.admin, `/spend-policies/keys/${b.keyId}`, { limits: [] });
      assert.equal(foreign.statusCode, 404, foreign.body);
      assert.equal((await f.get(intruder.admin, `/spend-policies/keys/${b.keyId}`)).statusCode, 404);
      assert.equal((await send(b.key, b.wallet, { recipientAddress: seller.wallet })).statusCode, 200);
    });

    it('refuses bad policies with 400 naming the field', async () => {
      const b = await buyer();
      const cases: [object, string][] = [
        [{ limits: [{ network: 'solana:nowhere', maxPerDay: '1' }] }, 'limits[0].network'],
        [
          { limits: [{ network: f.network, maxPerDay: `0.${'1'.repeat(f.native.decimals + 1)}` }] },
          'limits[0].maxPerDay',
        ],
        [{ limits: [{ network: f.network, asset: 'NOPE', maxPerDay: '1' }] }, 'limits[0].asset'],
        [{ allowedRecipients: ['not an address'] }, 'allowedRecipients[0]'],
        [{ allowedHosts: ['https://example.com/path'] }, 'allowedHosts[0]'],
        [{ allowedNetworks: ['eip155:999999999'] }, 'allowedNetworks[0]'],
        [{ expiresAt: 'tomorrow' }, 'expiresAt'],
      ];
      for (const [body, field] of cases) {
        const res = await put(b.admin, '/spend-policies/account', body);
        assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
        assert.ok(field in (res.json().error.details ?? {}), `${field}: ${res.body}`);
      }
    });

    it('counts a retried Idempotency-Key once, frees the amount of a payment that expired, and judges a refused Idempotency-Key afresh', async () => {
      const b = await buyer();
      await put(b.admin, '/spend-policies/account', {
        limits: [{ network: f.network, maxPerDay: decimal(2n * one) }],
      });
      const first = await send(
        b.key,
        b.wallet,
        { recipientAddress: seller.wallet },
        { 'idempotency-key': 'once' },
      );
      const again = await send(
        b.key,
        b.wallet,
        { recipientAddress: seller.wallet },
        { 'idempotency-key': 'once' },
      );
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(again.json().paymentId, first.json().paymentId);
      assert.equal((await f.get(b.key, '/spend-policy')).json().daily[0].spent, decimal(one));
      // A local-mode build is a spend too: it takes the rest of the day's room.
      const built = await f.post(b.key, '/transaction/send', {
        walletAddress: b.wallet,
        recipientAddress: seller.wallet,
        amount: 0.001,
      });
      assert.equal(built.statusCode, 200, built.body);
      const full = await send(
        b.key,
        b.wallet,
        { recipientAddress: seller.wallet },
        { 'idempotency-key': 'later' },
      );
      assert.equal(full.statusCode, 403, full.body);
      assert.equal(full.json().error.code, 'SPEND_LIMIT_EXCEEDED');
      // The build is never signed; once it is expired (what the reconciler records when it can no
      // longer land), its amount counts no more.
      const payment = await f.gw.store.payments.get(built.json().paymentId);
      assert.ok(payment !== undefined);
      assert.ok(await f.gw.services.ledger.move(payment, 'expired', { error: 'never signed' }));
      // The refusal was not stored as the Idempotency-Key's answer: its retry is judged afresh, and pays.
      const freed = await send(
        b.key,
        b.wallet,
        { recipientAddress: seller.wallet },
        { 'idempotency-key': 'later' },
      );
      assert.equal(freed.statusCode, 200, freed.body);
      const replayed = await send(
        b.key,
        b.wallet,
        { recipientAddress: seller.wallet },
        { 'idempotency-key': 'later' },
      );
      assert.equal(
        replayed.json().paymentId,
        freed.json().paymentId,
        'and once paid, the key answers that payment',
      );
    });
  });
}
