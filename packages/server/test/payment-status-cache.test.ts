import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NetworkRegistry } from '../src/chains/network-registry.ts';
import { GatewayError } from '../src/domain/gateway-error.ts';
import { isFinal, PAYMENT_STATUSES, type PaymentStatus } from '../src/domain/payment-status.ts';
import { AccountService } from '../src/services/account-service.ts';
import { SecretBox } from '../src/services/custody/secret-box.ts';
import { FinalPaymentCache } from '../src/services/final-payment-cache.ts';
import { PaymentLedger } from '../src/services/payment-ledger.ts';
import { PaymentQueryService } from '../src/services/payment-query.ts';
import { WalletService } from '../src/services/wallet-service.ts';
import { openStore } from '../src/store/open-store.ts';
import type { PaymentRecord, Store } from '../src/store/store.ts';
import { aTestPayment } from './support/test-payment.ts';

function payment(accountId: string, status: PaymentStatus): PaymentRecord {
  return aTestPayment(Date.now(), accountId, { status });
}

describe('FinalPaymentCache', () => {
  it('keeps a payment only in a state no transition leaves (finalized, failed)', () => {
    assert.deepEqual(
      PAYMENT_STATUSES.filter((status) => isFinal(status)),
      ['finalized', 'failed'],
    );
    const cache = new FinalPaymentCache();
    for (const status of PAYMENT_STATUSES) {
      const record = payment('acct_a', status);
      cache.remember(record);
      assert.equal(cache.get(record.id), isFinal(status) ? record : undefined, status);
    }
  });

  it('holds at most its capacity, letting the record cached first go', () => {
    const cache = new FinalPaymentCache(2);
    const [first, second, third] = [1, 2, 3].map(() => payment('acct_a', 'finalized'));
    for (const record of [first, second, third]) if (record !== undefined) cache.remember(record);
    assert.equal(cache.get(first?.id ?? ''), undefined);
    assert.equal(cache.get(second?.id ?? ''), second);
    assert.equal(cache.get(third?.id ?? ''), third);
  });
});

describe('GET /payment/status with final payments kept in memory (SQLite)', () => {
  let store: Store;
  let ledger: PaymentLedger;
  let query: PaymentQueryService;
  let owner: string;
  let stranger: string;
  let reads = 0;

  /** `store`, counting the payment reads made through it. */
  function readsCounted(inner: Store): Store {
    const payments = new Proxy(inner.payments, {
      get: (repository, name) =>
        name === 'get'
          ? (id: string) => {
              reads++;
              return repository.get(id);
            }
          : Reflect.get(repository, name),
    });
    return new Proxy(inner, {
      get: (target, name) => {
        if (name === 'payments') return payments;
        const value = Reflect.get(target, name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  before(async () => {
    ({ store } = await openStore({
      kind: 'sqlite',
      file: join(mkdtempSync(join(tmpdir(), 'gate402-status-cache-')), 'status.sqlite'),
    }));
    const networks = new NetworkRegistry([]);
    ledger = new PaymentLedger(store, networks, Date.now);
    const wallets = new WalletService(store, networks, new SecretBox(randomBytes(32)));
    query = new PaymentQueryService(readsCounted(store), networks, wallets);
    const accounts = new AccountService(store);
    owner = (await accounts.createAccount({ name: 'owner', plan: 'standard' })).id;
    stranger = (await accounts.createAccount({ name: 'stranger', plan: 'standard' })).id;
  });
  after(() => store.close());

  it('shows every state change of an open payment, then the final one', async () => {
    const sent = payment(owner, 'submitted');
    await ledger.record(sent);
    const readsBefore = reads;
    assert.equal((await query.status(owner, sent.id)).status, 'submitted');
    assert.equal((await query.status(owner, sent.id)).status, 'submitted');
    const confirmed = await ledger.move(sent, 'confirmed', { confirmedAt: Date.now() });
    assert.equal((await query.status(owner, sent.id)).status, 'confirmed');
    if (confirmed === undefined) throw new Error('the payment did not move to confirmed');
    await ledger.move(confirmed, 'finalized');
    assert.equal(reads - readsBefore, 3, 'an open payment is read from storage each time');
    assert.equal((await query.status(owner, sent.id)).status, 'finalized');
    assert.equal((await query.status(owner, sent.id)).status, 'finalized');
    assert.equal(reads - readsBefore, 4, 'a finalized one only the first time');
  });

  it("answers another account's final payment as missing, before and after the owner read it", async () => {
    const failed = payment(owner, 'failed');
    await ledger.record(failed);
    const notFound = (error: unknown) => error instanceof GatewayError && error.code === 'PAYMENT_NOT_FOUND';
    await assert.rejects(query.status(stranger, failed.id), notFound);
    assert.equal((await query.status(owner, failed.id)).status, 'failed');
    await assert.rejects(query.status(stranger, failed.id), notFound);
  });
});
