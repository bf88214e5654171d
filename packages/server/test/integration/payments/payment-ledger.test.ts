import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NetworkRegistry } from '../../../src/chains/network-registry.ts';
import { AccountService } from '../../../src/services/accounts/account-service.ts';
import { PaymentLedger } from '../../../src/services/payments/payment-ledger.ts';
import { openStore } from '../../../src/store/open-store.ts';
import type { Store } from '../../../src/store/store.ts';
import { aTestPayment } from '../../support/test-payment.ts';

describe('payment ledger: a payment the chain finalized before it was seen confirmed', () => {
  let store: Store;
  let ledger: PaymentLedger;
  let accountId: string;
  const confirmations: number[] = [];

  before(async () => {
    ({ store } = await openStore({
      kind: 'sqlite',
      file: join(mkdtempSync(join(tmpdir(), 'gate402-ledger-')), 'ledger.sqlite'),
    }));
    ledger = new PaymentLedger(store, new NetworkRegistry([]), Date.now, {
      paymentConfirmed: (_network, seconds) => confirmations.push(seconds),
    });
    accountId = (await new AccountService(store).createAccount({ name: 'ledger', plan: 'standard' })).id;
  });
  after(() => store.close());

  it('writes payment.confirmed before payment.finalized, and counts the confirmation once', async () => {
    const at = Date.now();
    const payment = aTestPayment(at, accountId, { status: 'submitted' });
    await ledger.record(payment);

    const finalized = await ledger.move(payment, 'finalized', { confirmedAt: at + 1 });
    assert.equal(finalized?.status, 'finalized');
    const events = await store.events.listAfter(accountId, 0, 10);
    assert.deepEqual(
      events.map((e) => [e.type, (e.data as { status: string }).status]),
      [
        ['payment.confirmed', 'confirmed'],
        ['payment.finalized', 'finalized'],
      ],
    );
    assert.equal(confirmations.length, 1);

    // Moving it again changes nothing and writes nothing.
    assert.equal(await ledger.move(payment, 'finalized'), undefined);
    assert.equal((await store.events.listAfter(accountId, 0, 10)).length, 2);
  });
});
