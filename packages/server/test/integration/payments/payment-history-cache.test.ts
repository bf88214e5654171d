import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import { HistoryPageCache, noneMatch } from '../../../src/services/payments/history-page-cache.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { bearer, startTestGateway, type TestGateway } from '../../support/test-gateway.ts';
import { aTestPayment } from '../../support/test-payment.ts';

/**
 * GET /payment/history answers from rendered pages kept per instance (HistoryPageCache) while the
 * wallet's history version is unchanged. Two gateways share one storage, as two instances behind a load
 * balancer: every write is made through one instance's store (the payment repository every service
 * writes through), and the other instance's next read must show it — and equal, byte for byte, the
 * page it would build from storage without any cache.
 */
for (const [name, skip, storage] of [
  ['SQLite file', false, async () => tempSqlite()],
  ['PostgreSQL schema', SKIP_POSTGRES, tempPostgres],
] as const) {
  describe(`history pages kept in memory: two instances on one ${name}`, { skip }, () => {
    let shared: TempStorage;
    let a: TestGateway;
    let b: TestGateway;
    let owner: { accountId: string; key: string };
    let other: { accountId: string; key: string };
    // An address no account registered: its payments are shown to the account that has them (a local
    // payer), and anyone else is answered 403.
    const wallet = privateKeyToAccount(generatePrivateKey()).address;
    let t = Date.now() - 60_000;
    const payment = (accountId: string, overrides: Partial<PaymentRecord>) =>
      aTestPayment(++t, accountId, {
        walletAddress: wallet,
        sender: wallet,
        signature: `sig-${randomBytes(4).toString('hex')}`,
        ...overrides,
      });

    before(async () => {
      shared = await storage();
      a = await startTestGateway({ storage: shared });
      b = await startTestGateway({ storage: shared, disposeStorage: false });
      owner = await a.newCaller('premium');
      other = await a.newCaller('premium');
    });
    after(async () => {
      await b?.close();
      await a?.close();
    });

    /** B's page over HTTP, checked against the page B's service reads from storage with no cache. */
    async function page(
      caller: { accountId: string; key: string },
      query = '',
      headers: Record<string, string> = {},
    ) {
      const res = await b.app.inject({
        method: 'GET',
        url: `/payment/history/${wallet}${query}`,
        headers: { ...bearer(caller.key), ...headers },
      });
      if (res.statusCode !== 200) return res;
      const search = new URLSearchParams(query);
      const fresh = await b.services.query.history(caller.accountId, {
        walletAddress: wallet,
        type: (search.get('type') ?? 'all') as 'all' | 'sent' | 'received',
        limit: Number(search.get('limit') ?? 50),
        offset: Number(search.get('offset') ?? 0),
      });
      assert.deepEqual(res.json(), JSON.parse(JSON.stringify(fresh)), 'the page as storage holds it');
      return res;
    }
    const statuses = (res: { json(): { payments: { paymentId: string; status: string }[] } }) =>
      res.json().payments.map((p) => `${p.paymentId} ${p.status}`);

    it('shows each write made on the other instance on its next read, and never another account’s page', async () => {
      const sends = [
        payment(owner.accountId, { status: 'submitted' }),
        payment(owner.accountId, { status: 'submitted' }),
        payment(owner.accountId, { status: 'confirmed' }),
      ];
      const theirs = payment(other.accountId, { status: 'submitted' });
      for (const p of [...sends, theirs]) await a.store.payments.insert(p);
      const [first, second, third] = sends as [PaymentRecord, PaymentRecord, PaymentRecord];

      const initial = await page(owner);
      assert.equal(initial.json().total, 3);
      assert.deepEqual(statuses(initial), [
        `${third.id} confirmed`,
        `${second.id} submitted`,
        `${first.id} submitted`,
      ]);
      const etag = initial.headers.etag;
      assert.match(String(etag), /^"[A-Za-z0-9_-]{27}"$/);
      // Kept: the same text again, and 304 to a client that has it.
      const again = await page(owner);
      assert.equal(again.body, initial.body);
      assert.equal(again.headers.etag, etag);
      const unchanged = await page(owner, '', { 'if-none-match': String(etag) });
      assert.equal(unchanged.statusCode, 304);
      assert.equal(unchanged.body, '');

      // The other account asks for the same wallet and page: its own payment only.
      const others = await page(other);
      assert.equal(others.statusCode, 200, others.body);
      assert.equal(others.json().total, 1);
      assert.deepEqual(statuses(others), [`${theirs.id} submitted`]);
      assert.notEqual(others.headers.etag, etag);
      // A third account has nothing there and does not own the wallet: 403, kept pages or not.
      const stranger = await a.newCaller('premium');
      assert.equal((await page(stranger)).statusCode, 403);

      // A state change committed on A: B's next read shows it; the old tag no longer matches.
      await a.store.payments.transition(first.id, ['submitted'], 'confirmed', { slot: 7n }, ++t);
      const confirmed = await page(owner, '', { 'if-none-match': String(etag) });
      assert.equal(confirmed.statusCode, 200);
      assert.deepEqual(statuses(confirmed), [
        `${third.id} confirmed`,
        `${second.id} submitted`,
        `${first.id} confirmed`,
      ]);
      assert.notEqual(confirmed.headers.etag, etag);

      // Another account's change to its own payment of the same address leaves this page as it was.
      await a.store.payments.transition(theirs.id, ['submitted'], 'failed', { error: 'x' }, ++t);
      assert.equal((await page(owner)).body, confirmed.body);
      assert.deepEqual(statuses(await page(other)), [`${theirs.id} failed`]);

      // A replacement transaction (a new signature), and a confirmed payment that landed again elsewhere.
      const replaced = await a.store.payments.replaceTransaction(
        second.id,
        String(second.signature),
        { signature: 'sig-replaced' },
        ++t,
      );
      assert.equal(replaced?.signature, 'sig-replaced');
      const relocated = await a.store.payments.relocate(
        third.id,
        { signature: 'sig-relocated', slot: 9n },
        ++t,
      );
      assert.equal(relocated?.signature, 'sig-relocated');
      const signatures = (await page(owner)).json().payments.map((p: { signature: string }) => p.signature);
      assert.deepEqual(signatures, ['sig-relocated', 'sig-replaced', first.signature]);

      // A new payment, on each page shape that shows it.
      const fourth = payment(owner.accountId, {
        direction: 'received',
        status: 'submitted',
        recipient: wallet,
      });
      await a.store.payments.insert(fourth);
      const all = await page(owner);
      assert.equal(all.json().total, 4);
      assert.equal(all.json().payments[0].paymentId, fourth.id);
      assert.deepEqual(
        (await page(owner, '?type=received')).json().payments.map((p: { paymentId: string }) => p.paymentId),
        [fourth.id],
      );
      const sent = await page(owner, '?type=sent&limit=2&offset=1');
      assert.equal(sent.json().total, 3);
      await a.store.payments.transition(fourth.id, ['submitted'], 'confirmed', {}, ++t);
      assert.deepEqual(statuses(await page(owner, '?type=received')), [`${fourth.id} confirmed`]);
      // Nothing of that direction changed, so the kept sent page is still exact (page() checks it).
      assert.equal((await page(owner, '?type=sent&limit=2&offset=1')).body, sent.body);

      // An x402 upto payment recorded at its maximum, confirmed at what settled: the amount changes.
      const upto = payment(owner.accountId, { status: 'submitted', amount: 5_000_000n });
      await a.store.payments.insert(upto);
      assert.equal((await page(owner)).json().payments[0].amount, 0.005);
      await a.store.payments.transition(upto.id, ['submitted'], 'confirmed', { amount: 2_000_000n }, ++t);
      assert.equal((await page(owner)).json().payments[0].amount, 0.002);
    });
  });
}

describe('HistoryPageCache', () => {
  it('keeps each page with the version it was read at, and evicts the page kept longest ago', () => {
    const cache = new HistoryPageCache(2, 100);
    const at = (version: number) => ({ version, total: 1, token: undefined });
    const kept = cache.keep('a', at(1), '{"a":1}');
    assert.equal(cache.get('a')?.page, kept);
    assert.equal(cache.get('a')?.version, 1);
    cache.keep('a', at(2), '{"a":2}');
    assert.equal(cache.get('a')?.version, 2, 'replaced');
    assert.equal(cache.get('a')?.page.body.toString(), '{"a":2}');
    cache.keep('b', at(1), '{"b":1}');
    cache.keep('c', at(1), '{"c":1}');
    assert.equal(cache.get('a'), undefined, 'past two pages');
    assert.equal(cache.get('b')?.page.body.toString(), '{"b":1}');
    cache.keep('d', at(1), 'x'.repeat(95));
    assert.equal(cache.get('b'), undefined, 'past 100 bytes');
    assert.equal(cache.get('c'), undefined, 'past 100 bytes');
    assert.equal(cache.get('d')?.page.body.length, 95);
    // Larger than the whole budget: answered, not kept.
    const big = cache.keep('e', at(1), 'y'.repeat(101));
    assert.equal(big.body.length, 101);
    assert.equal(cache.get('e'), undefined);
    assert.equal(cache.get('d')?.page.body.length, 95);
    // Kept nothing at all with no room for a page.
    const none = new HistoryPageCache(0, 0);
    none.keep('a', at(1), '{}');
    assert.equal(none.get('a'), undefined);
  });

  it('matches If-None-Match as RFC 9110 says: weakly, in a list, or *', () => {
    const tag = '"abc"';
    assert.equal(noneMatch(undefined, tag), false);
    assert.equal(noneMatch('"abc"', tag), true);
    assert.equal(noneMatch('W/"abc"', tag), true);
    assert.equal(noneMatch('"x", "abc"', tag), true);
    assert.equal(noneMatch('*', tag), true);
    assert.equal(noneMatch('"abcd"', tag), false);
    assert.equal(noneMatch('abc', tag), false);
  });
});
