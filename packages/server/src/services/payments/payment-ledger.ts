import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { newId } from '../../domain/ids.ts';
import { toWholeUnits } from '../../domain/money.ts';
import { type EventType, type PaymentStatus, statusesBefore } from '../../domain/payment-status.ts';
import type { PaymentChanges, PaymentRecord } from '../../domain/records/payment-records.ts';
import type { PaymentLease, Repositories, Store } from '../../store/store.ts';
import { assetOfPayment } from './payment-asset.ts';
import { paymentView } from './payment-view.ts';
import { refundsView } from './refunds/refund-totals.ts';

/**
 * Every payment state change goes through here: the new state and its outbox event are written in one
 * database transaction (DESIGN.md "Events"), and a change is a compare-and-set, so of two writers
 * (a request and a background worker, or two instances) exactly one moves the payment and emits the event.
 */
/** Told when a payment reaches `confirmed` (metrics: confirmation latency). Cheap, never throws. */
export interface ConfirmationObserver {
  paymentConfirmed(network: string, seconds: number): void;
}

export class PaymentLedger {
  constructor(
    private readonly store: Store,
    private readonly networks: NetworkRegistry,
    private readonly now: () => number = Date.now,
    private readonly observer?: ConfirmationObserver,
  ) {}

  /** Records a new payment; `event` is written with it (e.g. payment.received). */
  async record(
    payment: PaymentRecord,
    options: { event?: EventType; lease?: PaymentLease } = {},
  ): Promise<void> {
    await this.store.transaction((tx) => this.recordIn(tx, payment, options.event, options.lease));
  }

  /** As `record`, inside a transaction the caller holds (e.g. with the proof it consumes). */
  async recordIn(
    tx: Repositories,
    payment: PaymentRecord,
    event?: EventType,
    lease?: PaymentLease,
  ): Promise<void> {
    await tx.payments.insert(payment, lease);
    if (event !== undefined) await tx.events.append(this.event(payment, event));
  }

  /** Moves the payment to `to`; undefined when it had already left the states that lead there. */
  async move(
    payment: PaymentRecord,
    to: PaymentStatus,
    changes: PaymentChanges = {},
  ): Promise<PaymentRecord | undefined> {
    return this.store.transaction((tx) => this.moveIn(tx, payment, to, changes));
  }

  /** As `move`, inside a transaction the caller holds (e.g. with the proof it consumes). */
  async moveIn(
    tx: Repositories,
    payment: PaymentRecord,
    to: PaymentStatus,
    changes: PaymentChanges = {},
  ): Promise<PaymentRecord | undefined> {
    // Straight to finalized (the chain finalized it before confirmed was seen) goes through confirmed
    // first, so every paid payment has its payment.confirmed event and is counted as confirmed once.
    const from =
      to === 'finalized' && payment.status !== 'confirmed'
        ? ((await this.moveIn(tx, payment, 'confirmed', changes)) ?? payment)
        : payment;
    const moved = await tx.payments.transition(from.id, statusesBefore(to), to, changes, this.now());
    // Counted when the move is made; a transaction rolled back afterwards is rare enough not to matter
    // for a latency histogram.
    if (
      moved !== undefined &&
      to === 'confirmed' &&
      this.observer !== undefined &&
      from.confirmedAt === null
    ) {
      const at = moved.confirmedAt ?? this.now();
      this.observer.paymentConfirmed(moved.network, (at - moved.createdAt) / 1_000);
    }
    const type = moved === undefined ? undefined : eventFor(moved, to);
    if (moved !== undefined && type !== undefined) await tx.events.append(this.event(moved, type));
    if (moved?.refundOf !== undefined && (to === 'confirmed' || to === 'reverted')) {
      await this.refundEvent(tx, moved, to === 'confirmed' ? 'payment.refunded' : 'payment.refund_reverted');
    }
    return moved;
  }

  /**
   * payment.refunded / payment.refund_reverted on the payment `refund` gives back, in the transaction
   * that moved the refund, with what its refunds now add up to: a seller's books follow the chain, and
   * a refund that a reorganisation takes off the chain gives its amount back to what is refundable.
   */
  private async refundEvent(tx: Repositories, refund: PaymentRecord, type: EventType): Promise<void> {
    const original = refund.refundOf === undefined ? undefined : await tx.payments.get(refund.refundOf);
    if (original === undefined) return;
    const asset = assetOfPayment(this.networks, original);
    const refunds = await tx.payments.refundsOf(original.id);
    const data = {
      ...paymentView(original, asset),
      refunds: refundsView(original, refunds, asset.decimals, this.networks.get(original.network)),
      refund: {
        paymentId: refund.id,
        amount: toWholeUnits(refund.amount, asset.decimals),
        status: refund.status,
        signature: refund.signature,
      },
    };
    await tx.events.append({
      id: newId('evt'),
      accountId: original.accountId,
      type,
      paymentId: original.id,
      data,
      createdAt: this.now(),
    });
  }

  private event(payment: PaymentRecord, type: EventType) {
    const data = paymentView(payment, assetOfPayment(this.networks, payment));
    return {
      id: newId('evt'),
      accountId: payment.accountId,
      type,
      paymentId: payment.id,
      data: { ...data },
      createdAt: this.now(),
    };
  }
}

function eventFor(payment: PaymentRecord, status: PaymentStatus): EventType | undefined {
  switch (status) {
    case 'submitted':
      return payment.direction === 'sent' ? 'payment.sent' : undefined;
    case 'confirmed':
      return 'payment.confirmed';
    case 'finalized':
      return 'payment.finalized';
    case 'failed':
      return 'payment.failed';
    case 'expired':
      return 'payment.expired';
    case 'reverted':
      return 'payment.reverted';
    case 'pending':
      return undefined;
  }
}
