import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { GatewayError } from '../../../src/domain/gateway-error.ts';
import { isFinal, PAYMENT_STATUSES, type PaymentStatus } from '../../../src/domain/payment-status.ts';
import type { PaymentRecord } from '../../../src/domain/records/payment-records.ts';
import { AccountService } from '../../../src/services/accounts/account-service.ts';
import { SecretBox } from '../../../src/services/custody/secret-box.ts';
import { PaymentLedger } from '../../../src/services/payments/payment-ledger.ts';
import { PaymentQueryService } from '../../../src/services/payments/payment-query.ts';
import { PaymentStatusCache } from '../../../src/services/payments/payment-status-cache.ts';
import { WalletService } from '../../../src/services/wallets/wallet-service.ts';
import { openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { SKIP_POSTGRES, type TempStorage, tempPostgres, tempSqlite } from '../../support/databases.ts';
import { aTestPayment } from '../../support/test-payment.ts';

function payment(accountId: string, status: PaymentStatus): PaymentRecord {
  return aTestPayment(Date.now(), accountId, { status });
}

/** A storage stand-in for the cache's own rules: payments by id, a token the test sets, reads counted. */
function fakeStore(token: string | undefined) {
  const fake = {
    token,
    reads: 0,
    rows: new Map<string, PaymentRecord>(),
    /** Runs during the next read, as a write committed while the read is in flight would. */
    duringRead: undefined as (() => void) | undefined,
    changeToken: () => fake.token,
    payments: {
      get: async (id: string) => {
        fake.reads++;
        const row = fake.rows.get(id);
        fake.duringRead?.();
        fake.duringRead = undefined;
        return row;
      },
    },
  };
  return fake;
}

describe('PaymentStatusCache', () => {
  it('keeps a payment in a state no transition leaves (finalized, failed, reverted) for good, token or none', async () => {
    assert.deepEqual(
      PAYMENT_STATUSES.filter((status) => isFinal(status)),
      ['finalized', 'failed', 'reverted'],
    );
    const store = fakeStore(undefined);
    const cache = new PaymentStatusCache(store);
    for (const status of PAYMENT_STATUSES) {
      const record = payment('acct_a', status);
      store.rows.set(record.id, record);
      const readsBefore = store.reads;
      assert.equal(await cache.get(record.id), record);
      store.token = 'changed';
      assert.equal(await cache.get(record.id), record);
      store.token = undefined;
      assert.equal(await cache.get(record.id), record);
      assert.equal(store.reads - readsBefore, isFinal(status) ? 1 : 3, status);
    }
  });

  it('serves an open payment from memory while the change token is unchanged, and reads it again after', async () => {
    const store = fakeStore('1:1');
    const cache = new PaymentStatusCache(store);
    const open = payment('acct_a', 'submitted');
    store.rows.set(open.id, open);
    assert.equal(await cache.get(open.id), open);
    assert.equal(await cache.get(open.id), open);
    assert.equal(store.reads, 1);
    const confirmed = { ...open, status: 'confirmed' as const };
    store.rows.set(open.id, confirmed);
    store.token = '1:2';
    assert.equal(await cache.get(open.id), confirmed);
    assert.equal(await cache.get(open.id), confirmed);
    assert.equal(store.reads, 2);
  });

  it('does not keep what it read while a write came in (the token moved during the read)', async () => {
    const store = fakeStore('1:1');
    const cache = new PaymentStatusCache(store);
    const open = payment('acct_a', 'submitted');
    store.rows.set(open.id, open);
    const confirmed = { ...open, status: 'confirmed' as const };
    // The read answers the old row, and a write lands before the read is over.
    store.duringRead = () => {
      store.rows.set(open.id, confirmed);
      store.token = '1:2';
    };
    assert.equal(await cache.get(open.id), open);
    assert.equal(await cache.get(open.id), confirmed, 'the old row must not be served under the new token');
    assert.equal(store.reads, 2);
  });

  it('does not keep a missing payment: one recorded later is found', async () => {
    const store = fakeStore('1:1');
    const cache = new PaymentStatusCache(store);
    const later = payment('acct_a', 'finalized');
    assert.equal(await cache.get(later.id), undefined);
    store.rows.set(later.id, later);
    assert.equal(await cache.get(later.id), later);
  });

  it('holds at most its capacity, letting the entry stored longest ago go', async () => {
    const store = fakeStore('1:1');
    const cache = new PaymentStatusCache(store, 2);
    const [first, second, third] = ['finalized', 'submitted', 'failed'].map((status) =>
      payment('acct_a', status as PaymentStatus),
    ) as [PaymentRecord, PaymentRecord, PaymentRecord];
    for (const record of [first, second, third]) {
      store.rows.set(record.id, record);
      await cache.get(record.id);
    }
    const readsBefore = store.reads;
    for (const record of [second, third]) assert.equal(await cache.get(record.id), record);
    assert.equal(store.reads, readsBefore, 'the two stored last are kept');
    await cache.get(first.id);
    assert.equal(store.reads, readsBefore + 1, 'the first was let go');
  });
});

/** A write that has nothing to do with payments: an account of no one's. */
function anUnrelatedWrite(store: Store): Promise<void> {
  return store.accounts.insert({
    id: `acct_${randomBytes(8).toString('hex')}`,
    name: 'unrelated',
    plan: 'standard',
    customRateLimit: null,
    createdAt: Date.now(),
    updatedAt: Date.now(),
  });
}

/**
 * Two stores on one database stand for two gate402 instances: `writer` changes payments, `reader`
 * answers status through the cache (its store counting the reads).
 */
function describeStatusAcrossInstances(
  name: string,
  storage: () => Promise<TempStorage>,
  skip: string | false,
) {
  describe(`GET /payment/status kept in memory, ${name}`, { skip }, () => {
    let temp: TempStorage;
    let reader: Store;
    let writer: Store;
    let ledger: PaymentLedger;
    let writerLedger: PaymentLedger;
    let query: PaymentQueryService;
    let owner: string;
    let stranger: string;
    let reads = 0;
    const isSqlite = name.startsWith('SQLite');

    /** `store`, counting the payment reads made through it. */
    function readsCounted(inner: Store): Store {
      const payments = new Proxy(inner.payments, {
        get: (repository, property) =>
          property === 'get'
            ? (id: string) => {
                reads++;
                return repository.get(id);
              }
            : Reflect.get(repository, property),
      });
      return new Proxy(inner, {
        get: (target, property) => {
          if (property === 'payments') return payments;
          const value = Reflect.get(target, property);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    }

    /** The reads `work` made through the reader's store. */
    async function readsOf(work: () => Promise<void>): Promise<number> {
      const before = reads;
      await work();
      return reads - before;
    }

    before(async () => {
      temp = await storage();
      ({ store: reader } = await openStore(temp.location));
      ({ store: writer } = await openStore(temp.location));
      const networks = new NetworkRegistry([]);
      ledger = new PaymentLedger(reader, networks, Date.now);
      writerLedger = new PaymentLedger(writer, networks, Date.now);
      const wallets = new WalletService(reader, networks, new SecretBox(randomBytes(32)));
      query = new PaymentQueryService(readsCounted(reader), networks, wallets);
      const accounts = new AccountService(reader);
      owner = (await accounts.createAccount({ name: 'owner', plan: 'standard' })).id;
      stranger = (await accounts.createAccount({ name: 'stranger', plan: 'standard' })).id;
    });
    after(async () => {
      await reader?.close();
      await writer?.close();
      await temp?.dispose();
    });

    it('has a change token on SQLite only, alike until something is written', async () => {
      if (!isSqlite) {
        assert.equal(reader.changeToken(), undefined);
        return;
      }
      const token = reader.changeToken();
      assert.equal(typeof token, 'string');
      await reader.payments.get('pay_missing');
      assert.equal(reader.changeToken(), token, 'a read changes nothing');
      await anUnrelatedWrite(reader);
      const afterOwnWrite = reader.changeToken();
      assert.notEqual(afterOwnWrite, token, "this process's own write");
      await writer.transaction(async (tx) => {
        await tx.payments.insert(payment(owner, 'submitted'));
      });
      assert.notEqual(reader.changeToken(), afterOwnWrite, "another instance's commit");
    });

    it('shows every state change of an open payment, made by this instance or another, at once', async () => {
      const sent = { ...payment(owner, 'submitted'), signature: 'first-signature' };
      await ledger.record(sent);
      const polled = await readsOf(async () => {
        assert.equal((await query.status(owner, sent.id)).status, 'submitted');
        assert.equal((await query.status(owner, sent.id)).status, 'submitted');
        assert.equal((await query.status(owner, sent.id)).status, 'submitted');
      });
      assert.equal(polled, isSqlite ? 1 : 3, 'polled without writes: read once (SQLite) or every time');

      // Another instance replaces the transaction (a re-signed send): status shows the new signature.
      const replaced = await writer.payments.replaceTransaction(
        sent.id,
        'first-signature',
        { signature: 'replacement-signature' },
        Date.now(),
      );
      if (replaced === undefined) throw new Error('the transaction was not replaced');
      assert.equal((await query.status(owner, sent.id)).signature, 'replacement-signature');

      const confirmed = await ledger.move(replaced, 'confirmed', {
        confirmedAt: Date.now(),
        blockHeight: 7n,
      });
      if (confirmed === undefined) throw new Error('the payment did not move to confirmed');
      const shownHere = await query.status(owner, sent.id);
      assert.equal(shownHere.status, 'confirmed');
      assert.equal(shownHere.blockHeight, 7);

      await writerLedger.move(confirmed, 'finalized');
      assert.equal((await query.status(owner, sent.id)).status, 'finalized', "another instance's move");
      const final = await readsOf(async () => {
        assert.equal((await query.status(owner, sent.id)).status, 'finalized');
        await anUnrelatedWrite(writer);
        assert.equal((await query.status(owner, sent.id)).status, 'finalized');
      });
      assert.equal(final, 0, 'a finalized payment is not read again, whatever is written');
    });

    it('reads an open payment again after any write, and shows the same', async () => {
      const sent = payment(owner, 'pending');
      await ledger.record(sent);
      await query.status(owner, sent.id);
      const reread = await readsOf(async () => {
        await anUnrelatedWrite(writer);
        assert.equal((await query.status(owner, sent.id)).status, 'pending');
      });
      assert.equal(reread, 1);
    });

    it("answers another account's payment as missing, before and after the owner read it", async () => {
      const notFound = (error: unknown) =>
        error instanceof GatewayError && error.code === 'PAYMENT_NOT_FOUND';
      for (const status of ['failed', 'submitted'] as const) {
        const own = payment(owner, status);
        await ledger.record(own);
        await assert.rejects(query.status(stranger, own.id), notFound);
        assert.equal((await query.status(owner, own.id)).status, status);
        await assert.rejects(query.status(stranger, own.id), notFound);
      }
    });
  });
}

describeStatusAcrossInstances('SQLite, two instances on one file', async () => tempSqlite(), false);
describeStatusAcrossInstances('PostgreSQL, two instances', tempPostgres, SKIP_POSTGRES);
