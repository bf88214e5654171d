import type { PaymentRecord } from '../../../domain/records/payment-records.ts';

/**
 * What a held refund's status says it waits for (`heldUntil` in the refund answer and in its status):
 * the payment it refunds to be `finalized`.
 */
export const HELD_UNTIL_ORIGINAL_FINALIZED = 'refunded_payment_finalized';

/**
 * A custodial refund of a payment that was only `confirmed` when it was asked for (#30): recorded
 * `pending` and counted against what the payment can still give back, but with no transaction yet —
 * nothing is signed, no EVM nonce is taken, nothing is broadcast — until the payment it refunds is
 * `finalized` (a reorganisation can still take a merely confirmed payment off the chain, and the seller
 * must not have paid back money it never kept). HeldRefundRelease (held-refund-release.ts) then signs
 * and sends it, or ends it `failed` when the refunded payment never became final.
 *
 * It is told apart by what no other payment is: a custodial send that is pending with no transaction.
 * Every other custodial send stores its signed transaction in the same row insert that records it.
 */
export function isHeldRefund(
  payment: Pick<PaymentRecord, 'refundOf' | 'mode' | 'direction' | 'status' | 'signature'>,
): boolean {
  return (
    payment.refundOf !== undefined &&
    payment.mode === 'custodial' &&
    payment.direction === 'sent' &&
    payment.status === 'pending' &&
    payment.signature === null
  );
}
