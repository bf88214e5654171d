import { isFinal } from '../../domain/payment-status.ts';
import type { PaymentRecord } from '../../domain/records/payment-records.ts';
import type { PaymentRepository, Store } from '../../store/store.ts';

/** About 1–2 KiB a record (its signed transaction is most of it): a few MiB at the most. */
const DEFAULT_CAPACITY = 4_096;

/** An entry kept for good: its payment is in a final state. */
const FOR_GOOD = Symbol('final');

interface Entry {
  readonly payment: PaymentRecord;
  /** FOR_GOOD, or the store's change token under which `payment` is what storage holds. */
  readonly token: string | typeof FOR_GOOD;
}

/**
 * Payments by id for GET /payment/status, so that a payment polled again and again (a buyer waiting
 * for `confirmed`, a seller for `finalized`) is not read from storage on every request.
 *
 * Payments in a final state (finalized, failed) are kept for good. Invariant: what status shows of a
 * payment in a final state never changes again. No transition leads out of it (payment-status.ts); the
 * repository changes a payment only by a transition the state machine allows (it enforces that) or by
 * replacing the transaction of an open one, and its lease columns, which status does not show; nothing
 * deletes payments. So a record read once in such a state is what every instance's database holds for
 * good, on one instance or several. A migration must therefore not rewrite what status shows of final
 * payments: instances still running would go on showing old values.
 *
 * A payment in any other state is kept under the store's change token (Store.changeToken), and only
 * when the token was alike before and after the read, so no write fell in between; it is served while
 * the token is still that value. Any write to the database changes the token, by this process or (on
 * SQLite) another on the same file, so a kept payment can never hide a change: a write to anything else
 * merely costs one more read. Where the store has no token (PostgreSQL, whose other instances' writes
 * this process cannot see cheaply), such payments are read every time.
 *
 * Bounded: past `capacity`, the entry stored longest ago goes.
 */
export class PaymentStatusCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly store: Pick<Store, 'changeToken'> & {
      readonly payments: Pick<PaymentRepository, 'get'>;
    },
    private readonly capacity = DEFAULT_CAPACITY,
  ) {}

  /** The payment as storage holds it now: from memory when that is certain, else read (and kept). */
  async get(id: string): Promise<PaymentRecord | undefined> {
    const entry = this.entries.get(id);
    if (entry?.token === FOR_GOOD) return entry.payment;
    const before = this.store.changeToken();
    if (entry !== undefined && before !== undefined && entry.token === before) return entry.payment;
    const payment = await this.store.payments.get(id);
    if (payment !== undefined) this.keep(payment, before);
    return payment;
  }

  private keep(payment: PaymentRecord, before: string | undefined): void {
    let token: Entry['token'] = FOR_GOOD;
    if (!isFinal(payment.status)) {
      // Not `this.store.changeToken() === before` alone: both undefined means no token at all.
      if (before === undefined || this.store.changeToken() !== before) return;
      token = before;
    }
    // Re-inserted, not updated: the entry stored longest ago is the one to evict.
    if (!this.entries.delete(payment.id) && this.entries.size >= this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(payment.id, { payment, token });
  }
}
