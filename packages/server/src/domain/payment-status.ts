/**
 * Payment states (DESIGN.md "Payments"):
 * pending (built; signed bytes may be stored, not yet known to be broadcast) → submitted (broadcast)
 * → confirmed → finalized; or failed (landed with an error) or expired (never landed before its
 * blockhash or expiresAt ran out). `confirmed` is what send, receive and status show on success.
 *
 * expired → confirmed (→ finalized) is the one way back: the chain is the ground truth, and a
 * local-mode EVM transaction the caller signed stays valid until its nonce is used, so it can still be
 * mined after gate402 gave up on it (broadcast late, or held by a node that did not show it waiting).
 * When the chain shows it landed, the payment says so (PaymentReconciler's late-landing watch).
 *
 * confirmed → reverted: the transaction left the chain (a reorganisation, a skipped Solana block, a
 * rollback) and can no longer land — the chain finalized past where it was without it, and gate402
 * holds no signed bytes of it that are still valid to broadcast again (see finality-watch.ts).
 * `reverted` is final: the payment paid nothing, and the proof it backed is refused from then on.
 */
export const PAYMENT_STATUSES = [
  'pending',
  'submitted',
  'confirmed',
  'finalized',
  'failed',
  'expired',
  'reverted',
] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

const NEXT: Readonly<Record<PaymentStatus, readonly PaymentStatus[]>> = {
  pending: ['submitted', 'confirmed', 'finalized', 'failed', 'expired'],
  submitted: ['confirmed', 'finalized', 'failed', 'expired'],
  confirmed: ['finalized', 'reverted'],
  finalized: [],
  failed: [],
  expired: ['confirmed', 'finalized'],
  reverted: [],
};

export function canMove(from: PaymentStatus, to: PaymentStatus): boolean {
  return NEXT[from].includes(to);
}

/** A state no payment ever leaves (finalized, failed, reverted): its record is what it will always be. */
export function isFinal(status: PaymentStatus): boolean {
  return NEXT[status].length === 0;
}

/** The states a payment can still leave: those a background worker watches. */
export const OPEN_STATUSES: readonly PaymentStatus[] = ['pending', 'submitted', 'confirmed'];

/** States that may move to `to`. */
export function statusesBefore(to: PaymentStatus): PaymentStatus[] {
  return PAYMENT_STATUSES.filter((from) => canMove(from, to));
}

export type PaymentDirection = 'sent' | 'received';
/**
 * custodial: the gateway signed (Lightning mode); local: the caller signed (local transaction mode);
 * facilitator: an x402 payment the buyer signed and the built-in facilitator settled (paying the fee);
 * x402: an x402 payment payload the gateway signed for a custodial wallet (POST /payment/x402), settled by
 * the seller's facilitator, which broadcasts it (the gateway holds no transaction of its own to resend).
 */
export type PaymentMode = 'custodial' | 'local' | 'facilitator' | 'x402';

/** The event written to the outbox when a payment enters a state. */
export const EVENT_TYPES = [
  'payment.sent',
  'payment.received',
  'payment.confirmed',
  'payment.finalized',
  'payment.failed',
  'payment.expired',
  'payment.reverted',
  /**
   * On a received payment, when one of its refunds confirms (#30): the payment with its `refunds`
   * totals and the `refund` that confirmed. The refund itself has its own payment.confirmed.
   */
  'payment.refunded',
  /**
   * On a received payment, when a confirmed refund of it left the chain for good (reorganisation):
   * its amount is refundable again, and the refund itself has its own payment.reverted.
   */
  'payment.refund_reverted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
