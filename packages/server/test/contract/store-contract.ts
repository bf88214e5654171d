import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generateApiKey } from '../../src/domain/api-key.ts';
import { newId } from '../../src/domain/ids.ts';
import type { AccountRecord, ApiKeyRecord } from '../../src/domain/records/account-records.ts';
import type { PaymentRecord } from '../../src/domain/records/payment-records.ts';
import type { WalletRecord } from '../../src/domain/records/wallet-records.ts';
import type { Store } from '../../src/store/store.ts';
import { aTestAccount } from '../support/test-account.ts';
import { aTestPayment } from '../support/test-payment.ts';

/**
 * The behaviour every Store must have. Each implementation (in-memory, SQLite, PostgreSQL) runs this
 * same suite, so the fast fake cannot drift from the real databases.
 */
export function describeStoreContract(
  name: string,
  open: () => Promise<{ store: Store; dispose(): Promise<void> }>,
  options: { skip?: string | false } = {},
): void {
  describe(`Store contract: ${name}`, { skip: options.skip ?? false }, () => {
    let store: Store;
    let dispose: () => Promise<void>;

    before(async () => {
      ({ store, dispose } = await open());
    });
    after(async () => {
      await store?.close();
      await dispose?.();
    });

    it('answers ping', async () => {
      await store.ping();
    });

    it('stores an account and reads it back exactly', async () => {
      const account = anAccount({ name: 'Ünïcode “name” ✓', plan: 'enterprise', customRateLimit: 12_345 });
      await store.accounts.insert(account);
      assert.deepEqual(await store.accounts.get(account.id), account);
      assert.equal(await store.accounts.get('acct_missing'), undefined);
    });

    it('refuses a second account with the same id and keeps the first', async () => {
      const account = anAccount({ name: 'first' });
      await store.accounts.insert(account);
      await assert.rejects(store.accounts.insert({ ...account, name: 'second' }));
      assert.equal((await store.accounts.get(account.id))?.name, 'first');
    });

    it('lists accounts newest first and counts them', async () => {
      const before = await store.accounts.count();
      const a = anAccount({ createdAt: 1_000 });
      const b = anAccount({ createdAt: 2_000 });
      await store.accounts.insert(a);
      await store.accounts.insert(b);
      const ids = (await store.accounts.list()).map((x) => x.id);
      assert.ok(ids.indexOf(b.id) < ids.indexOf(a.id));
      assert.equal(await store.accounts.count(), before + 2);
    });

    it('changes a plan and reports an unknown account as undefined', async () => {
      const account = anAccount({ plan: 'standard' });
      await store.accounts.insert(account);
      const updated = await store.accounts.updatePlan(account.id, {
        plan: 'enterprise',
        customRateLimit: 5_000,
        updatedAt: account.updatedAt + 1,
      });
      assert.deepEqual(updated, {
        ...account,
        plan: 'enterprise',
        customRateLimit: 5_000,
        updatedAt: account.updatedAt + 1,
      });
      assert.deepEqual(await store.accounts.get(account.id), updated);
      assert.equal(
        await store.accounts.updatePlan('acct_missing', {
          plan: 'premium',
          customRateLimit: null,
          updatedAt: 1,
        }),
        undefined,
      );
    });

    it('finds an active key with its account by hash', async () => {
      const account = anAccount({ plan: 'premium' });
      await store.accounts.insert(account);
      const key = aKey(account.id);
      await store.apiKeys.insert(key);
      assert.deepEqual(await store.apiKeys.findActiveByHash(key.hash), { key, account });
      assert.equal(await store.apiKeys.findActiveByHash('0'.repeat(64)), undefined);
    });

    it('refuses a key for an unknown account and a duplicate hash', async () => {
      await assert.rejects(store.apiKeys.insert(aKey('acct_does_not_exist')));
      const account = anAccount();
      await store.accounts.insert(account);
      const key = aKey(account.id);
      await store.apiKeys.insert(key);
      await assert.rejects(store.apiKeys.insert({ ...aKey(account.id), hash: key.hash }));
    });

    it('revokes once: a revoked key is not found, and a second revoke keeps the first time', async () => {
      const account = anAccount();
      await store.accounts.insert(account);
      const key = aKey(account.id);
      await store.apiKeys.insert(key);
      const revoked = await store.apiKeys.revoke(key.id, 5_000);
      assert.deepEqual(revoked, { ...key, revokedAt: 5_000 });
      assert.equal(await store.apiKeys.findActiveByHash(key.hash), undefined);
      assert.equal((await store.apiKeys.revoke(key.id, 9_000))?.revokedAt, 5_000);
      assert.equal(await store.apiKeys.revoke('key_missing', 1), undefined);
    });

    it('lists an account’s keys oldest first, revoked included, and only that account’s', async () => {
      const account = anAccount();
      const other = anAccount();
      await store.accounts.insert(account);
      await store.accounts.insert(other);
      const first = aKey(account.id);
      const second = aKey(account.id);
      await store.apiKeys.insert(first);
      await store.apiKeys.insert(second);
      await store.apiKeys.insert(aKey(other.id));
      await store.apiKeys.revoke(first.id, 7);
      assert.deepEqual(await store.apiKeys.listByAccount(account.id), [{ ...first, revokedAt: 7 }, second]);
    });

    it('records last use and never moves it backwards', async () => {
      const account = anAccount();
      await store.accounts.insert(account);
      const key = aKey(account.id);
      await store.apiKeys.insert(key);
      await store.apiKeys.touch(key.id, 2_000);
      await store.apiKeys.touch(key.id, 1_000);
      assert.equal((await store.apiKeys.get(key.id))?.lastUsedAt, 2_000);
    });

    it('keeps one dashboard user per email and per account', async () => {
      const account = anAccount();
      const other = anAccount();
      await store.accounts.insert(account);
      await store.accounts.insert(other);
      const user = aDashboardUser(account.id, 'first@example.test');
      assert.equal(await store.dashboardUsers.insert(user), true);
      assert.equal(await store.dashboardUsers.insert(aDashboardUser(other.id, 'first@example.test')), false);
      assert.equal(
        await store.dashboardUsers.insert(aDashboardUser(account.id, 'second@example.test')),
        false,
      );
      assert.deepEqual(await store.dashboardUsers.get(user.id), user);
      assert.deepEqual(await store.dashboardUsers.findByEmail('first@example.test'), user);
      assert.deepEqual(await store.dashboardUsers.findByAccount(account.id), user);
      assert.equal(await store.dashboardUsers.findByEmail('second@example.test'), undefined);
      assert.equal(await store.dashboardUsers.findByAccount(other.id), undefined);
      await store.dashboardUsers.setPassword(user.id, 'scrypt$new', user.updatedAt + 5);
      assert.deepEqual(await store.dashboardUsers.get(user.id), {
        ...user,
        passwordHash: 'scrypt$new',
        updatedAt: user.updatedAt + 5,
      });
    });

    it('finds a dashboard session with its user until it expires, and forgets it when deleted', async () => {
      const account = anAccount();
      await store.accounts.insert(account);
      const user = aDashboardUser(account.id, `${account.id.toLowerCase()}@example.test`);
      await store.dashboardUsers.insert(user);
      const session = {
        idHash: `h-${account.id}`,
        userId: user.id,
        csrfToken: 'csrf',
        createdAt: 100,
        expiresAt: 200,
      };
      const second = { ...session, idHash: `h2-${account.id}`, expiresAt: 300 };
      await store.dashboardSessions.insert(session);
      await store.dashboardSessions.insert(second);
      assert.deepEqual(await store.dashboardSessions.findActive(session.idHash, 199), { session, user });
      assert.equal(await store.dashboardSessions.findActive(session.idHash, 200), undefined, 'expired');
      assert.equal(await store.dashboardSessions.findActive('h-unknown', 0), undefined);
      assert.ok((await store.dashboardSessions.deleteExpired(250)) >= 1);
      assert.deepEqual(await store.dashboardSessions.findActive(second.idHash, 250), {
        session: second,
        user,
      });
      await store.dashboardSessions.delete(second.idHash);
      assert.equal(await store.dashboardSessions.findActive(second.idHash, 250), undefined);
      await store.dashboardSessions.insert({ ...session, expiresAt: 10_000 });
      await store.dashboardSessions.deleteByUser(user.id);
      assert.equal(await store.dashboardSessions.findActive(session.idHash, 250), undefined);
    });
  });
}

function aDashboardUser(accountId: string, email: string) {
  clock += 1;
  return {
    id: newId('user'),
    accountId,
    email,
    passwordHash: 'scrypt$16384$8$1$salt$hash',
    createdAt: clock,
    updatedAt: clock,
  };
}

let clock = Date.UTC(2026, 0, 1);

function anAccount(overrides: Partial<AccountRecord> = {}): AccountRecord {
  clock += 1;
  return aTestAccount(newId('acct'), { name: 'account', createdAt: clock, updatedAt: clock, ...overrides });
}

function aKey(accountId: string): ApiKeyRecord {
  const generated = generateApiKey();
  clock += 1;
  return {
    id: newId('key'),
    accountId,
    name: 'key',
    displayPrefix: generated.displayPrefix,
    hash: generated.hash.toString('hex'),
    createdAt: clock,
    lastUsedAt: null,
    revokedAt: null,
    scopes: [],
  };
}

/** Wallets, payments, proofs, events, idempotency keys and transactions, on every Store. */
export function describePaymentStoreContract(
  name: string,
  open: () => Promise<{ store: Store; dispose(): Promise<void> }>,
  options: { skip?: string | false } = {},
): void {
  describe(`Store contract, payments: ${name}`, { skip: options.skip ?? false }, () => {
    let store: Store;
    let dispose: () => Promise<void>;
    let account: AccountRecord;

    before(async () => {
      ({ store, dispose } = await open());
      account = anAccount();
      await store.accounts.insert(account);
    });
    after(async () => {
      await store?.close();
      await dispose?.();
    });

    it('keeps one owner per address', async () => {
      const other = anAccount();
      await store.accounts.insert(other);
      const wallet = aWallet(account.id, 'ADDR1');
      assert.equal(await store.wallets.insert(wallet), true);
      assert.equal(
        await store.wallets.insert({ ...aWallet(other.id, 'ADDR1'), network: 'solana:other' }),
        false,
      );
      assert.equal(await store.wallets.insert({ ...aWallet(other.id, 'ADDR1'), family: 'evm' }), true);
      assert.deepEqual(await store.wallets.findByAddress('solana', 'ADDR1'), wallet);
      assert.deepEqual(await store.wallets.listByAccount(account.id), [wallet]);
    });

    it("sets and clears a wallet's label for its own account only; another account's is left as it is", async () => {
      const other = anAccount();
      await store.accounts.insert(other);
      const wallet = { ...aWallet(account.id, 'LABELLED'), label: 'Shop till' };
      assert.equal(await store.wallets.insert(wallet), true);
      assert.deepEqual(await store.wallets.findByAddress('solana', 'LABELLED'), wallet);
      const renamed = await store.wallets.setLabel(account.id, 'solana', 'LABELLED', 'Café – 東京 🙂');
      assert.deepEqual(renamed, { ...wallet, label: 'Café – 東京 🙂' });
      // Another account, the right address in the other family, or no wallet at all: nothing is written.
      assert.equal(await store.wallets.setLabel(other.id, 'solana', 'LABELLED', 'stolen'), undefined);
      assert.equal(await store.wallets.setLabel(account.id, 'evm', 'LABELLED', 'stolen'), undefined);
      assert.equal(await store.wallets.setLabel(account.id, 'solana', 'NOBODY', 'stolen'), undefined);
      assert.equal((await store.wallets.findByAddress('solana', 'LABELLED'))?.label, 'Café – 東京 🙂');
      assert.deepEqual(await store.wallets.setLabel(account.id, 'solana', 'LABELLED', null), {
        ...wallet,
        label: null,
      });
      const listed = await store.wallets.listByAccount(account.id);
      assert.equal(listed.find((w) => w.address === 'LABELLED')?.label, null);
    });

    it('keeps a wallet challenge until it expires, and lets it be used once, even by two writers at once', async () => {
      const challenge = {
        nonce: `n${Math.random().toString(16).slice(2)}`,
        accountId: account.id,
        family: 'evm' as const,
        address: '0x52908400098527886E0F7030069857D2E4169EE7',
        message: 'gate402: prove control of an address\n\nNonce: 1',
        createdAt: 1_000,
        expiresAt: 601_000,
        usedAt: null,
      };
      await store.walletChallenges.insert(challenge);
      assert.deepEqual(await store.walletChallenges.get(challenge.nonce), challenge);
      assert.equal(await store.walletChallenges.get('unknown'), undefined);
      const answers = await Promise.all([
        store.transaction((tx) => tx.walletChallenges.markUsed(challenge.nonce, 2_000)),
        store.walletChallenges.markUsed(challenge.nonce, 2_001),
      ]);
      assert.deepEqual(answers.sort(), [false, true], 'one writer uses it');
      assert.ok([2_000, 2_001].includes((await store.walletChallenges.get(challenge.nonce))?.usedAt ?? 0));
      // A transaction that fails after using a challenge leaves it unused.
      const second = { ...challenge, nonce: `${challenge.nonce}b`, expiresAt: 700_000 };
      await store.walletChallenges.insert(second);
      await assert.rejects(
        store.transaction(async (tx) => {
          assert.equal(await tx.walletChallenges.markUsed(second.nonce, 3_000), true);
          throw new Error('the wallet could not be registered');
        }),
        /could not be registered/,
      );
      assert.equal((await store.walletChallenges.get(second.nonce))?.usedAt, null);
      assert.equal(await store.walletChallenges.deleteExpired(601_000), 1, 'expired at 601,000');
      assert.equal(await store.walletChallenges.get(challenge.nonce), undefined);
      assert.deepEqual(await store.walletChallenges.get(second.nonce), second);
    });

    it("sums a wallet's unsettled spend: its custodial sends still pending or submitted on that network, amount and fee, per asset", async () => {
      const wallet = 'SPENDER';
      const USDC = { address: 'USDCMINT', decimals: 6 };
      const of = (overrides: Partial<PaymentRecord>) =>
        aPayment(account.id, { walletAddress: wallet, sender: wallet, fee: 5_000n, ...overrides });
      const counted = [
        of({ status: 'pending', amount: 1_000_000n }),
        of({ status: 'submitted', amount: 2_000_000n }),
        // Wei: beyond 2^64.
        of({ status: 'submitted', amount: 30_000_000_000_000_000_000n }),
        // A token send takes its amount in the token, and its fee in the native currency.
        of({ status: 'pending', amount: 4_000_000n, asset: USDC }),
      ];
      const settling = of({ status: 'submitted', amount: 7_000_000n, asset: USDC });
      const others = [
        of({ status: 'confirmed', amount: 100n }),
        of({ status: 'failed', amount: 200n }),
        of({ status: 'pending', amount: 300n, direction: 'received' }),
        of({ status: 'pending', amount: 400n, mode: 'local' }),
        of({ status: 'pending', amount: 500n, network: 'solana:elsewhere' }),
        of({ status: 'pending', amount: 600n, walletAddress: 'SOMEONE_ELSE', sender: 'SOMEONE_ELSE' }),
      ];
      for (const payment of [...counted, settling, ...others]) await store.payments.insert(payment);
      assert.deepEqual(await store.payments.unsettledSpend('solana:test', wallet), {
        native: 1_000_000n + 2_000_000n + 30_000_000_000_000_000_000n + 5n * 5_000n,
        tokens: new Map([['USDCMINT', 11_000_000n]]),
      });
      // Settled, it no longer holds any of the wallet's balance back.
      await store.payments.transition(settling.id, ['submitted'], 'confirmed', {}, clock + 1);
      assert.deepEqual(await store.payments.unsettledSpend('solana:test', wallet), {
        native: 1_000_000n + 2_000_000n + 30_000_000_000_000_000_000n + 4n * 5_000n,
        tokens: new Map([['USDCMINT', 4_000_000n]]),
      });
    });

    it('stores a payment exactly, amounts beyond 2^64 included', async () => {
      const payment = aPayment(account.id, {
        amount: 123_456_789_012_345_678_901_234_567n,
        fee: 5_000n,
        metadata: { description: 'ünïcode', nested: { n: 1 } },
        lastValidBlockHeight: 9_007_199_254_740_000n,
        signedTransaction: 'AQID',
      });
      await store.payments.insert(payment);
      assert.deepEqual(await store.payments.get(payment.id), payment);
    });

    it('keeps one payment per Idempotency-Key of an account; payments without a key never collide', async () => {
      const other = anAccount();
      await store.accounts.insert(other);
      const keyed = aPayment(account.id, { idempotencyKey: 'key-1' });
      await store.payments.insert(keyed);
      await assert.rejects(store.payments.insert(aPayment(account.id, { idempotencyKey: 'key-1' })));
      await store.payments.insert(aPayment(other.id, { idempotencyKey: 'key-1' }));
      for (let i = 0; i < 3; i++) await store.payments.insert(aPayment(account.id, { idempotencyKey: null }));
      assert.deepEqual(await store.payments.findByIdempotencyKey(account.id, 'key-1'), keyed);
      assert.equal(await store.payments.findByIdempotencyKey(account.id, 'key-2'), undefined);
    });

    it('moves a payment only from the states it names (compare-and-set)', async () => {
      const payment = aPayment(account.id, { status: 'pending' });
      await store.payments.insert(payment);
      const moved = await store.payments.transition(
        payment.id,
        ['pending'],
        'submitted',
        { signature: 'SIG' },
        99,
      );
      assert.equal(moved?.status, 'submitted');
      assert.equal(moved?.signature, 'SIG');
      assert.equal(moved?.updatedAt, 99);
      assert.equal(await store.payments.transition(payment.id, ['pending'], 'expired', {}, 100), undefined);
      assert.equal((await store.payments.get(payment.id))?.status, 'submitted');
    });

    it('never writes a payment in a final state again, whatever states a transition names', async () => {
      for (const status of ['finalized', 'failed', 'reverted'] as const) {
        const payment = aPayment(account.id, { status });
        await store.payments.insert(payment);
        for (const to of ['finalized', 'failed', 'confirmed', 'reverted'] as const) {
          const moved = await store.payments.transition(payment.id, [status], to, { error: 'late' }, 100);
          assert.equal(moved, undefined, `${status} → ${to}`);
        }
        assert.deepEqual(await store.payments.get(payment.id), payment);
      }
    });

    it('moves a confirmed payment to another block without changing its state, and nothing else (relocate)', async () => {
      const confirmed = aPayment(account.id, {
        status: 'confirmed',
        signature: 'SIG-R',
        slot: 10n,
        blockHeight: 9n,
      });
      await store.payments.insert(confirmed);
      const moved = await store.payments.relocate(
        confirmed.id,
        { slot: 14n, blockHeight: 12n, error: null },
        200,
      );
      assert.deepEqual(moved, { ...confirmed, slot: 14n, blockHeight: 12n, error: null, updatedAt: 200 });
      assert.deepEqual(await store.payments.get(confirmed.id), moved);
      for (const status of ['submitted', 'finalized', 'reverted'] as const) {
        const payment = aPayment(account.id, { status, slot: 10n });
        await store.payments.insert(payment);
        assert.equal(await store.payments.relocate(payment.id, { slot: 14n }, 200), undefined, status);
        assert.deepEqual(await store.payments.get(payment.id), payment);
      }
    });

    it('searches the payments of an account across wallets by wallet, direction and status, newest first', async () => {
      const owner = anAccount();
      await store.accounts.insert(owner);
      const rows = [1, 2, 3, 4, 5, 6].map((i) =>
        aPayment(owner.id, {
          walletAddress: i <= 4 ? 'SEARCH-A' : 'SEARCH-B',
          createdAt: 2_000 + i,
          direction: i % 2 === 0 ? 'received' : 'sent',
          status: i === 3 ? 'failed' : 'confirmed',
        }),
      );
      for (const row of rows) await store.payments.insert(row);
      const stranger = anAccount();
      await store.accounts.insert(stranger);
      await store.payments.insert(aPayment(stranger.id, { walletAddress: 'SEARCH-A' }));
      const times = (r: { payments: { createdAt: number }[] }) => r.payments.map((p) => p.createdAt);

      const all = await store.payments.search({ accountId: owner.id, limit: 2, offset: 1 });
      assert.equal(all.total, 6);
      assert.deepEqual(times(all), [2_005, 2_004]);
      const walletA = await store.payments.search({
        accountId: owner.id,
        walletAddress: 'SEARCH-A',
        limit: 10,
        offset: 0,
      });
      assert.deepEqual([walletA.total, times(walletA)], [4, [2_004, 2_003, 2_002, 2_001]]);
      const sent = await store.payments.search({
        accountId: owner.id,
        direction: 'sent',
        limit: 10,
        offset: 0,
      });
      assert.deepEqual([sent.total, times(sent)], [3, [2_005, 2_003, 2_001]]);
      const failedSentA = await store.payments.search({
        accountId: owner.id,
        walletAddress: 'SEARCH-A',
        direction: 'sent',
        status: 'failed',
        limit: 10,
        offset: 0,
      });
      assert.deepEqual([failedSentA.total, times(failedSentA)], [1, [2_003]]);
    });

    it("sums an account's paid volume per UTC day, direction and asset exactly, uint256 amounts included", async () => {
      const owner = anAccount();
      await store.accounts.insert(owner);
      const day = 86_400_000;
      const start = 20_000 * day;
      const usdc = { address: 'USDC-MINT', decimals: 6 };
      const eth18 = { address: '0xToken', decimals: 18 };
      const huge = 2n ** 256n - 1n;
      const rows = [
        aPayment(owner.id, { createdAt: start + 1, direction: 'received', amount: 999_999_999n }),
        aPayment(owner.id, { createdAt: start + 2, direction: 'received', amount: 1n }),
        aPayment(owner.id, { createdAt: start + 3, direction: 'sent', amount: 5n }),
        aPayment(owner.id, { createdAt: start + 4, direction: 'received', amount: 7n, status: 'failed' }),
        aPayment(owner.id, { createdAt: start + 5, direction: 'received', amount: 7n, status: 'reverted' }),
        aPayment(owner.id, { createdAt: start + 6, direction: 'received', amount: 7n, status: 'pending' }),
        aPayment(owner.id, { createdAt: start + day, direction: 'received', amount: 250n, asset: usdc }),
        aPayment(owner.id, { createdAt: start + day + 1, direction: 'received', amount: huge, asset: eth18 }),
        aPayment(owner.id, {
          createdAt: start + day + 2,
          direction: 'received',
          amount: huge,
          asset: eth18,
          status: 'finalized',
        }),
        // Outside the range on both sides.
        aPayment(owner.id, { createdAt: start - 1, direction: 'received', amount: 11n }),
        aPayment(owner.id, { createdAt: start + 2 * day, direction: 'received', amount: 11n }),
      ];
      for (const row of rows) await store.payments.insert(row);
      const stranger = anAccount();
      await store.accounts.insert(stranger);
      await store.payments.insert(
        aPayment(stranger.id, { createdAt: start + 1, direction: 'received', amount: 3n }),
      );

      const volume = await store.paymentVolume.byDay(owner.id, start, start + 2 * day);
      const shown = volume.map((v) => [v.day, v.direction, v.asset?.address ?? null, v.count, v.amount]);
      assert.deepEqual(
        shown.sort((a, b) => String(a).localeCompare(String(b))),
        [
          [start, 'received', null, 2, 1_000_000_000n],
          [start, 'sent', null, 1, 5n],
          [start + day, 'received', '0xToken', 2, huge * 2n],
          [start + day, 'received', 'USDC-MINT', 1, 250n],
        ].sort((a, b) => String(a).localeCompare(String(b))),
      );
      assert.equal(volume.find((v) => v.asset?.address === '0xToken')?.asset?.decimals, 18);
      assert.deepEqual(await store.paymentVolume.byDay(owner.id, start + 3 * day, start + 4 * day), []);
    });

    it('ranks resources by revenue within each asset, paid incoming payments only', async () => {
      const owner = anAccount();
      await store.accounts.insert(owner);
      const at = 30_000 * 86_400_000;
      const usdc = { address: 'USDC-MINT', decimals: 6 };
      const paid = (resource: string, amount: bigint, extra: Partial<PaymentRecord> = {}) =>
        aPayment(owner.id, { createdAt: at, direction: 'received', resource, amount, ...extra });
      const rows = [
        paid('https://api.example/a', 10n),
        paid('https://api.example/a', 10n),
        paid('https://api.example/b', 30n),
        paid('https://api.example/c', 5n),
        paid('https://api.example/d', 1_000n, { status: 'failed' }),
        paid('https://api.example/e', 1_000n, { direction: 'sent' }),
        paid('https://api.example/a', 7n, { asset: usdc }),
      ];
      for (const row of rows) await store.payments.insert(row);
      const top = await store.paymentVolume.topResources(owner.id, at, at + 1, 2);
      assert.deepEqual(
        top.map((r) => [r.asset?.address ?? null, r.resource, r.count, r.amount]),
        [
          [null, 'https://api.example/b', 1, 30n],
          [null, 'https://api.example/a', 2, 20n],
          ['USDC-MINT', 'https://api.example/a', 1, 7n],
        ],
      );
    });

    it('pages history newest first with a total, by wallet and direction', async () => {
      const owner = anAccount();
      await store.accounts.insert(owner);
      const rows = [1, 2, 3, 4, 5].map((i) =>
        aPayment(owner.id, {
          walletAddress: 'HIST',
          createdAt: 1_000 + i,
          direction: i % 2 === 0 ? 'received' : 'sent',
        }),
      );
      for (const row of rows) await store.payments.insert(row);
      await store.payments.insert(aPayment(owner.id, { walletAddress: 'OTHER' }));
      const all = await store.payments.history({
        accountId: owner.id,
        walletAddress: 'HIST',
        direction: undefined,
        limit: 2,
        offset: 1,
      });
      assert.equal(all.total, 5);
      assert.deepEqual(
        all.payments.map((p) => p.createdAt),
        [1_004, 1_003],
      );
      const sent = await store.payments.history({
        accountId: owner.id,
        walletAddress: 'HIST',
        direction: 'sent',
        limit: 10,
        offset: 0,
      });
      assert.equal(sent.total, 3);
      assert.deepEqual(
        sent.payments.map((p) => p.createdAt),
        [1_005, 1_003, 1_001],
      );
      const none = await store.payments.history({
        accountId: account.id,
        walletAddress: 'HIST',
        direction: undefined,
        limit: 10,
        offset: 0,
      });
      assert.deepEqual(none, { total: 0, payments: [] });
    });

    it('lists each payment with exactly the fields a history entry shows, token amounts exact', async () => {
      const owner = anAccount();
      await store.accounts.insert(owner);
      const token = aPayment(owner.id, {
        walletAddress: 'SUMMARY',
        direction: 'received',
        status: 'finalized',
        sender: 'BUYER',
        recipient: 'SUMMARY',
        amount: 123_456_789_012_345_678_901n,
        resource: 'https://api.example/data',
        signature: 'sig-1',
        asset: { address: 'MINT', decimals: 6 },
        metadata: { note: 'not listed' },
        signedTransaction: 'AQID',
        createdAt: 5_000,
      });
      const native = aPayment(owner.id, { walletAddress: 'SUMMARY', createdAt: 4_000 });
      await store.payments.insert(token);
      await store.payments.insert(native);
      const expected = [token, native].map((p) => ({
        id: p.id,
        direction: p.direction,
        status: p.status,
        network: p.network,
        sender: p.sender,
        recipient: p.recipient,
        amount: p.amount,
        resource: p.resource,
        signature: p.signature,
        createdAt: p.createdAt,
        ...(p.asset === undefined ? {} : { asset: p.asset }),
      }));
      const page = { accountId: owner.id, walletAddress: 'SUMMARY', limit: 10, offset: 0 };
      assert.deepEqual((await store.payments.history({ ...page, direction: undefined })).payments, expected);
      assert.deepEqual((await store.payments.search(page)).payments, expected);
    });

    it('leases each open payment to one owner at a time, and again once the lease lapses', async () => {
      const payment = aPayment(account.id, { status: 'submitted', createdAt: 1 });
      await store.payments.insert(payment);
      const [a, b] = await Promise.all([
        store.payments.lease('worker-a', ['submitted'], 1_000, 2_000, 100),
        store.payments.lease('worker-b', ['submitted'], 1_000, 2_000, 100),
      ]);
      const owners = [a, b].filter((list) => list.some((p) => p.id === payment.id));
      assert.equal(owners.length, 1, 'exactly one worker got it');
      const again = await store.payments.lease('worker-c', ['submitted'], 1_500, 2_500, 100);
      assert.ok(!again.some((p) => p.id === payment.id), 'still leased');
      const later = await store.payments.lease('worker-c', ['submitted'], 2_001, 3_000, 100);
      assert.ok(
        later.some((p) => p.id === payment.id),
        'lapsed lease taken over',
      );
      await store.payments.releaseLease(payment.id, 'worker-c');
      const released = await store.payments.lease('worker-d', ['submitted'], 2_002, 3_000, 100);
      assert.ok(released.some((p) => p.id === payment.id));
    });

    it('leases expired payments of one mode changed since a time, one owner at a time', async () => {
      const ids = async (list: Promise<PaymentRecord[]>) =>
        (await list).map((p) => p.id).filter((id) => mine.includes(id));
      const recent = aPayment(account.id, { mode: 'local', status: 'expired', updatedAt: 50_000 });
      const old = aPayment(account.id, { mode: 'local', status: 'expired', updatedAt: 39_999 });
      const custodial = aPayment(account.id, { status: 'expired', updatedAt: 50_000 });
      const pending = aPayment(account.id, { mode: 'local', status: 'pending', updatedAt: 50_000 });
      const mine = [recent.id, old.id, custodial.id, pending.id];
      for (const p of [recent, old, custodial, pending]) await store.payments.insert(p);
      const [a, b] = await Promise.all([
        ids(store.payments.leaseExpired('worker-a', 'local', 40_000, 60_000, 61_000, 100)),
        ids(store.payments.leaseExpired('worker-b', 'local', 40_000, 60_000, 61_000, 100)),
      ]);
      assert.deepEqual([...a, ...b], [recent.id], 'only the recent local one, to exactly one worker');
      assert.deepEqual(
        await ids(store.payments.leaseExpired('worker-c', 'local', 40_000, 60_500, 61_500, 100)),
        [],
        'still leased',
      );
      await store.payments.releaseLease(recent.id, a.length > 0 ? 'worker-a' : 'worker-b', 60_700);
      assert.deepEqual(
        await ids(store.payments.leaseExpired('worker-c', 'local', 40_000, 60_800, 61_800, 100)),
        [recent.id],
      );
    });

    it('consumes a proof once, even when many try at the same instant', async () => {
      assert.equal(await store.proofs.isConsumed('solana:test:SIGX'), false);
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          store.proofs.consume('solana:test:SIGX', `pay_${i}`, account.id, 1),
        ),
      );
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await store.proofs.consume('solana:test:SIGX', 'pay_late', account.id, 2), false);
      assert.equal(await store.proofs.isConsumed('solana:test:SIGX'), true);
    });

    it('names one receipt per x402 payload, even when many claim at the same instant, and replaces it only by compare-and-set', async () => {
      const identity = 'x402:eip155:31337:exact:0xBuyer:0x01';
      assert.equal(await store.x402Receipts.get(identity), undefined);
      const first = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.x402Receipts.claim(identity, `pay_${i}`, undefined, 1)),
      );
      assert.equal(first.filter(Boolean).length, 1);
      const winner = `pay_${first.indexOf(true)}`;
      assert.equal(await store.x402Receipts.get(identity), winner);
      assert.equal(await store.x402Receipts.claim(identity, 'pay_late', undefined, 2), false);
      // Replacing: only a claimer that read the current receipt, and only one of those.
      assert.equal(await store.x402Receipts.claim(identity, 'pay_stale', 'pay_none', 3), false);
      const replaced = await Promise.all(
        ['pay_x', 'pay_y', 'pay_z'].map((id) => store.x402Receipts.claim(identity, id, winner, 4)),
      );
      assert.equal(replaced.filter(Boolean).length, 1);
      assert.equal(
        await store.x402Receipts.get(identity),
        ['pay_x', 'pay_y', 'pay_z'][replaced.indexOf(true)],
      );
    });

    it('stores a token payment with its asset exactly', async () => {
      const payment = aPayment(account.id, {
        direction: 'received',
        mode: 'facilitator',
        amount: 10_000n,
        asset: { address: 'MINT', decimals: 6 },
      });
      await store.payments.insert(payment);
      assert.deepEqual(await store.payments.get(payment.id), payment);
    });

    it('keeps facilitator fee-payer keys once per address, per family, oldest first', async () => {
      const first = { address: 'FEEPAYER1', family: 'solana' as const, encryptedSecret: 's1', createdAt: 1 };
      const second = { address: 'FEEPAYER2', family: 'solana' as const, encryptedSecret: 's2', createdAt: 2 };
      assert.equal(await store.facilitatorSigners.insert(second), true);
      assert.equal(await store.facilitatorSigners.insert(first), true);
      assert.equal(await store.facilitatorSigners.insert({ ...first, encryptedSecret: 'other' }), false);
      assert.deepEqual(await store.facilitatorSigners.list('solana'), [first, second]);
      assert.deepEqual(await store.facilitatorSigners.list('evm'), []);
    });

    it('claims a settlement once, even when many try at the same instant, and moves it by compare-and-set', async () => {
      const settlement = {
        key: 'solana:test:TX1',
        network: 'solana:test',
        payer: 'BUYER',
        payTo: 'SELLER',
        asset: 'MINT',
        amount: 123_456_789_012_345_678_901n,
        transactionId: 'TX1',
        signedTransaction: 'AQID',
        lastValidBlockHeight: 9_007_199_254_740_000n,
        status: 'claimed' as const,
        error: null,
        paymentId: null,
        createdAt: 5,
        updatedAt: 5,
      };
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          store.settlements.claim({ ...settlement, transactionId: `TX${i === 0 ? 1 : `1-${i}`}` }),
        ),
      );
      assert.equal(results.filter(Boolean).length, 1);
      const stored = await store.settlements.get(settlement.key);
      assert.equal(stored?.amount, settlement.amount);
      assert.equal(stored?.lastValidBlockHeight, settlement.lastValidBlockHeight);
      const moved = await store.settlements.transition(
        settlement.key,
        ['claimed', 'submitted'],
        'settled',
        { paymentId: 'pay_1' },
        9,
      );
      assert.equal(moved?.status, 'settled');
      assert.equal(moved?.paymentId, 'pay_1');
      assert.equal(moved?.updatedAt, 9);
      assert.equal(moved?.error, null);
      assert.equal(
        await store.settlements.transition(settlement.key, ['claimed', 'submitted'], 'failed', {}, 10),
        undefined,
      );
      assert.equal(await store.settlements.get('solana:test:NONE'), undefined);
      // Settled on another transaction than its own (EVM: someone else submitted the authorization).
      await store.settlements.claim({
        ...settlement,
        key: 'eip155:1:exact:0xA:0x01',
        transactionId: '0xOWN',
      });
      const carried = await store.settlements.transition(
        'eip155:1:exact:0xA:0x01',
        ['claimed', 'submitted'],
        'settled',
        { paymentId: 'pay_2', transactionId: '0xCARRIER' },
        11,
      );
      assert.deepEqual([carried?.transactionId, carried?.signedTransaction], ['0xCARRIER', 'AQID']);
      assert.equal((await store.settlements.get('eip155:1:exact:0xA:0x01'))?.transactionId, '0xCARRIER');
      // Found again by the payment it recorded (FinalityWatch resends its bytes after a reorg).
      assert.equal((await store.settlements.findByPayment('pay_1'))?.key, settlement.key);
      assert.equal((await store.settlements.findByPayment('pay_2'))?.key, 'eip155:1:exact:0xA:0x01');
      assert.equal(await store.settlements.findByPayment('pay_none'), undefined);
    });

    it('keeps the account and Idempotency-Key of the request that claimed a settlement, and the resource it paid for, through its moves', async () => {
      const base = {
        network: 'solana:claimant',
        payer: 'BUYER',
        payTo: 'SELLER',
        asset: 'MINT',
        amount: 1n,
        signedTransaction: 'AQID',
        lastValidBlockHeight: null,
        status: 'claimed' as const,
        error: null,
        paymentId: null,
        createdAt: 1,
        updatedAt: 1,
      };
      const claimedBy = { accountId: 'acct_1', idempotencyKey: 'receipt-1' };
      const resource = 'https://shop.example/report?q=1';
      assert.equal(
        await store.settlements.claim({
          ...base,
          key: 'claimant:1',
          transactionId: 'TX-C1',
          claimedBy,
          resource,
        }),
        true,
      );
      assert.equal(
        await store.settlements.claim({ ...base, key: 'claimant:2', transactionId: 'TX-C2' }),
        true,
      );
      assert.deepEqual((await store.settlements.get('claimant:1'))?.claimedBy, claimedBy);
      assert.equal((await store.settlements.get('claimant:2'))?.claimedBy, null);
      const settled = await store.settlements.transition(
        'claimant:1',
        ['claimed'],
        'settled',
        { paymentId: 'pay_C' },
        2,
      );
      assert.deepEqual(settled?.claimedBy, claimedBy);
      assert.equal(settled?.resource, resource);
      const open = (await store.settlements.listOpen(5, 10)).find((s) => s.key === 'claimant:2');
      assert.deepEqual([open?.claimedBy, open?.resource], [null, null]);
    });

    it('keeps the account that asked for a settlement and the fee charged for it, and corrects the fee by compare-and-set', async () => {
      const base = {
        network: 'eip155:fees',
        payer: 'BUYER',
        payTo: 'SELLER',
        asset: 'TOKEN',
        amount: 1n,
        signedTransaction: 'AQID',
        lastValidBlockHeight: null,
        status: 'claimed' as const,
        error: null,
        paymentId: null,
        createdAt: 1,
        updatedAt: 1,
      };
      // A wei fee beyond 2^64: amounts are never squeezed into a 64-bit column.
      const reserved = { day: '2026-11-28', amount: 18_446_744_073_709_551_617n };
      assert.equal(
        await store.settlements.claim({
          ...base,
          key: 'fees:1',
          transactionId: 'TX-F1',
          accountId: 'acct_seller',
          sponsoredFee: reserved,
        }),
        true,
      );
      assert.equal(await store.settlements.claim({ ...base, key: 'fees:2', transactionId: 'TX-F2' }), true);
      const open = await store.settlements.get('fees:1');
      assert.deepEqual([open?.accountId, open?.sponsoredFee], ['acct_seller', reserved]);
      const legacy = await store.settlements.get('fees:2');
      assert.deepEqual([legacy?.accountId, legacy?.sponsoredFee], [null, null]);
      const settled = await store.settlements.transition(
        'fees:1',
        ['claimed', 'submitted'],
        'settled',
        { sponsoredFee: 76_000n },
        2,
      );
      assert.deepEqual(settled?.sponsoredFee, { day: '2026-11-28', amount: 76_000n });
      assert.equal(settled?.accountId, 'acct_seller');
    });

    it('claims an approval key once under a burst, gives it back only to its holder, and stores an approval step as it moves', async () => {
      const key = `payer:eip155:contract:${Date.now()}`;
      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          store.transaction((tx) => tx.settlements.claimApproval(key, `holder:${i}`, 1)),
        ),
      );
      assert.equal(claims.filter(Boolean).length, 1);
      const holder = `holder:${claims.indexOf(true)}`;
      const other = holder === 'holder:0' ? 'holder:1' : 'holder:0';
      // Released by another settlement: nothing changes; by its holder: free for the next one.
      await store.settlements.releaseApproval(key, other);
      assert.equal(await store.settlements.claimApproval(key, other, 2), false);
      await store.settlements.releaseApproval(key, holder);
      assert.equal(await store.settlements.claimApproval(key, other, 3), true);

      const step = {
        approvalTransaction: 'AQ==',
        approvalTransactionId: '0xa1',
        fundingTransaction: 'Ag==',
        fundingTransactionId: '0xf1',
        funded: 18_446_744_073_709_551_617n,
        voidTransaction: 'Aw==',
        voidTransactionId: '0xv1',
      };
      const settlement = {
        key: `step:${Date.now()}`,
        network: 'eip155:contract',
        payer: 'BUYER',
        payTo: 'SELLER',
        asset: 'TOKEN',
        amount: 1n,
        transactionId: 'TX-S1',
        signedTransaction: 'AQID',
        lastValidBlockHeight: null,
        status: 'claimed' as const,
        error: null,
        paymentId: null,
        createdAt: 1,
        updatedAt: 1,
        sponsoredApproval: step,
      };
      assert.equal(await store.settlements.claim(settlement), true);
      assert.deepEqual((await store.settlements.get(settlement.key))?.sponsoredApproval, step);
      const voided = await store.settlements.transition(
        settlement.key,
        ['claimed'],
        'claimed',
        { sponsoredApproval: { ...step, voided: true } },
        2,
      );
      assert.deepEqual(voided?.sponsoredApproval, { ...step, voided: true });
      assert.deepEqual((await store.settlements.get(settlement.key))?.sponsoredApproval, {
        ...step,
        voided: true,
      });
    });

    it('reserves sponsored fees within a daily limit, atomically under a burst, and gives them back', async () => {
      const day = '2026-11-28';
      const account = `acct_fees_${Date.now()}`;
      // 25 reservations of 10 at once against a limit of 95: exactly 9 fit, whatever the interleaving.
      const results = await Promise.all(
        Array.from({ length: 25 }, () =>
          store.transaction((tx) => tx.sponsoredFees.reserve(account, 'solana:burst', day, 10n, 95n, 1)),
        ),
      );
      const granted = results.filter((r) => r !== undefined);
      assert.equal(granted.length, 9);
      assert.deepEqual(
        granted.map(Number).sort((a, b) => a - b),
        [10, 20, 30, 40, 50, 60, 70, 80, 90],
      );
      assert.equal(await store.sponsoredFees.spent(account, 'solana:burst', day), 90n);
      // Another network and another day have budgets of their own.
      assert.equal(await store.sponsoredFees.spent(account, 'eip155:burst', day), 0n);
      assert.equal(
        await store.sponsoredFees.reserve(account, 'solana:burst', '2026-11-29', 95n, 95n, 1),
        95n,
      );
      // A reservation that would exceed the limit changes nothing; a correction gives back, never below 0.
      assert.equal(await store.sponsoredFees.reserve(account, 'solana:burst', day, 6n, 95n, 2), undefined);
      assert.equal(await store.sponsoredFees.spent(account, 'solana:burst', day), 90n);
      await store.sponsoredFees.adjust(account, 'solana:burst', day, -35n, 3);
      assert.equal(await store.sponsoredFees.spent(account, 'solana:burst', day), 55n);
      await store.sponsoredFees.adjust(account, 'solana:burst', day, -100n, 4);
      assert.equal(await store.sponsoredFees.spent(account, 'solana:burst', day), 0n);
      // A rolled-back claim takes its reservation with it.
      await assert.rejects(
        store.transaction(async (tx) => {
          await tx.sponsoredFees.reserve(account, 'solana:burst', day, 40n, 95n, 5);
          throw new Error('claim lost');
        }),
        /claim lost/,
      );
      assert.equal(await store.sponsoredFees.spent(account, 'solana:burst', day), 0n);
    });

    it('lists open settlements unchanged since a time, least recently changed first', async () => {
      const base = {
        network: 'solana:open',
        payer: 'BUYER',
        payTo: 'SELLER',
        asset: 'MINT',
        amount: 1n,
        signedTransaction: 'AQID',
        lastValidBlockHeight: null,
        error: null,
        paymentId: null,
        createdAt: 1,
      };
      const rows = [
        { key: 'open:claimed', status: 'claimed' as const, updatedAt: 300 },
        { key: 'open:submitted', status: 'submitted' as const, updatedAt: 200 },
        { key: 'open:recent', status: 'submitted' as const, updatedAt: 900 },
        { key: 'open:settled', status: 'settled' as const, updatedAt: 100 },
        { key: 'open:failed', status: 'failed' as const, updatedAt: 100 },
      ];
      for (const row of rows) {
        assert.equal(
          await store.settlements.claim({ ...base, ...row, transactionId: `TX-${row.key}` }),
          true,
        );
      }
      const open = (await store.settlements.listOpen(500, 10)).filter((s) => s.network === 'solana:open');
      assert.deepEqual(
        open.map((s) => s.key),
        ['open:submitted', 'open:claimed'],
      );
      assert.equal((await store.settlements.listOpen(500, 1)).length, 1);
    });

    it('appends events with increasing positions and lists them per account', async () => {
      const owner = anAccount();
      await store.accounts.insert(owner);
      const first = await store.events.append(anEvent(owner.id, 'payment.sent'));
      const second = await store.events.append(anEvent(owner.id, 'payment.confirmed'));
      await store.events.append(anEvent(account.id, 'payment.sent'));
      assert.ok(second > first);
      const listed = await store.events.listAfter(owner.id, 0, 10);
      assert.deepEqual(
        listed.map((e) => [e.seq, e.type]),
        [
          [first, 'payment.sent'],
          [second, 'payment.confirmed'],
        ],
      );
      assert.deepEqual(listed[0]?.data, { amount: 1.5 });
      assert.deepEqual(await store.events.listAfter(owner.id, second, 10), []);
    });

    it('commits a transaction whole or not at all', async () => {
      const payment = aPayment(account.id);
      await assert.rejects(
        store.transaction(async (tx) => {
          await tx.payments.insert(payment);
          await tx.events.append(anEvent(account.id, 'payment.sent'));
          throw new Error('crash between writes');
        }),
      );
      assert.equal(await store.payments.get(payment.id), undefined);
      await store.transaction(async (tx) => {
        await tx.payments.insert(payment);
      });
      assert.equal((await store.payments.get(payment.id))?.id, payment.id);
    });

    it('keeps concurrent transactions apart: one that fails leaves no trace, the others all commit', async () => {
      const payments = Array.from({ length: 20 }, () => aPayment(account.id));
      const results = await Promise.allSettled(
        payments.map((payment, i) =>
          store.transaction(async (tx) => {
            await tx.payments.insert(payment);
            await tx.events.append(anEvent(account.id, 'payment.sent'));
            if (i % 5 === 2) throw new Error(`unit ${i} fails after writing`);
            return i;
          }),
        ),
      );
      for (const [i, result] of results.entries()) {
        const stored = await store.payments.get(payments[i]?.id ?? '');
        if (i % 5 === 2) {
          assert.equal(result.status, 'rejected');
          assert.match(String((result as PromiseRejectedResult).reason), new RegExp(`unit ${i} fails`));
          assert.equal(stored, undefined, `payment ${i} was rolled back`);
        } else {
          assert.deepEqual(result, { status: 'fulfilled', value: i });
          assert.equal(stored?.id, payments[i]?.id, `payment ${i} was committed`);
        }
      }
    });

    it('claims idempotency keys: new, in progress, mismatch, completed, lapsed', async () => {
      const repo = store.idempotency;
      assert.deepEqual(await repo.claim(account.id, 'k1', 'h1', 1_000, 2_000), { state: 'claimed' });
      assert.deepEqual(await repo.claim(account.id, 'k1', 'h1', 1_500, 2_500), { state: 'in_progress' });
      assert.deepEqual(await repo.claim(account.id, 'k1', 'h2', 1_500, 2_500), { state: 'mismatch' });
      await repo.complete(account.id, 'k1', 200, '{"ok":true}');
      assert.deepEqual(await repo.claim(account.id, 'k1', 'h1', 1_600, 2_600), {
        state: 'completed',
        status: 200,
        body: '{"ok":true}',
      });
      assert.deepEqual(await repo.claim(account.id, 'k2', 'h1', 1_000, 2_000), { state: 'claimed' });
      assert.deepEqual(
        await repo.claim(account.id, 'k2', 'h1', 2_001, 3_000),
        { state: 'claimed' },
        'lapsed claim taken over',
      );
      await repo.release(account.id, 'k2');
      assert.deepEqual(
        await repo.claim(account.id, 'k2', 'h9', 2_002, 3_000),
        { state: 'claimed' },
        'released key is free',
      );
      assert.ok((await repo.purge(1_001)) >= 1);
    });
  });
}

function aWallet(accountId: string, address: string): WalletRecord {
  clock += 1;
  return {
    id: newId('wal'),
    accountId,
    family: 'solana',
    network: 'solana:test',
    address,
    watchOnly: false,
    encryptedSecret: 'sealed',
    createdAt: clock,
    label: null,
  };
}

function aPayment(accountId: string, overrides: Partial<PaymentRecord> = {}): PaymentRecord {
  clock += 1;
  return aTestPayment(clock, accountId, overrides);
}

function anEvent(accountId: string, type: string) {
  return { id: newId('evt'), accountId, type, paymentId: null, data: { amount: 1.5 }, createdAt: Date.now() };
}
