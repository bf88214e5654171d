import { isFinal } from '../domain/payment-status.ts';
import type { PaymentRecord } from '../store/store.ts';

/** About 1–2 KiB a record (its signed transaction is most of it): a few MiB at the most. */
const DEFAULT_CAPACITY = 4_096;

/**
 * Payments in a final state (finalized, failed), by id, for GET /payment/status.
 *
 * Invariant: what status shows of a payment in a final state never changes again. No transition leads
 * out of it (payment-status.ts); the repository changes a payment only by a transition the state
 * machine allows (it enforces that) or by replacing the transaction of an open one, and its lease
 * columns, which status does not show; nothing deletes payments. So a record read once in such a state
 * is what every instance's database holds for good, and the cache needs no invalidation, on one
 * instance or several. Records in any other state are never kept: they are read from storage on every
 * request. Bounded: past `capacity`, the record cached first goes. A migration must therefore not
 * rewrite what status shows of final payments: instances still running would go on showing old values.
 */
export class FinalPaymentCache {
  private readonly records = new Map<string, PaymentRecord>();

  constructor(private readonly capacity = DEFAULT_CAPACITY) {}

  get(id: string): PaymentRecord | undefined {
    return this.records.get(id);
  }

  /** Keeps `payment` if its state is final; anything else is ignored. */
  remember(payment: PaymentRecord): void {
    if (!isFinal(payment.status) || this.records.has(payment.id)) return;
    if (this.records.size >= this.capacity) {
      const oldest = this.records.keys().next().value;
      if (oldest !== undefined) this.records.delete(oldest);
    }
    this.records.set(payment.id, payment);
  }
}
