import type { ChainAdapter } from '../../../chains/chain-adapter.ts';
import { toWholeUnits } from '../../../domain/money.ts';
import type { PaymentRecord, RefundSummary } from '../../../domain/records/payment-records.ts';

/** What `refunds` on a received payment shows (GET /payment/status, the payment.refunded event). */
export interface RefundsView {
  /** Refunded for good: the refunds that are confirmed or finalized, in whole units of the payment's asset. */
  refunded: number;
  /** Refunds under way (pending, submitted, or an expired watch-only EVM refund that may still land). */
  pending: number;
  /** What a further refund may still give back: the payment's amount less every refund that counts. */
  refundable: number;
  /** Every refund of the payment, oldest first, whatever its state. */
  payments: { paymentId: string; amount: number; status: string; timestamp: number }[];
}

/**
 * Whether a refund still holds part of its payment's amount. A refund that failed or was reverted paid
 * nothing and frees its part. An expired one frees it too, except a watch-only (local-mode) refund on a
 * chain with account nonces (EVM): the caller's signed transaction stays valid until its nonce is used,
 * so it can still land after gate402 gave up on it, and counting it keeps the refunds of a payment from
 * ever summing above it. (A custodial EVM refund is marked expired only once its nonce is used.)
 */
export function holdsAmount(
  refund: Pick<RefundSummary, 'status' | 'mode'>,
  chain: ChainAdapter | undefined,
): boolean {
  switch (refund.status) {
    case 'failed':
    case 'reverted':
      return false;
    case 'expired':
      return refund.mode === 'local' && chain?.nonces !== undefined;
    default:
      return true;
  }
}

/** Atomic units of `payment` its refunds hold (see holdsAmount), and of those what is paid for good. */
export function refundTotals(
  refunds: readonly RefundSummary[],
  chain: ChainAdapter | undefined,
): { held: bigint; refunded: bigint } {
  let held = 0n;
  let refunded = 0n;
  for (const refund of refunds) {
    if (!holdsAmount(refund, chain)) continue;
    held += refund.amount;
    if (refund.status === 'confirmed' || refund.status === 'finalized') refunded += refund.amount;
  }
  return { held, refunded };
}

export function refundsView(
  payment: Pick<PaymentRecord, 'amount'>,
  refunds: readonly RefundSummary[],
  decimals: number,
  chain: ChainAdapter | undefined,
): RefundsView {
  const { held, refunded } = refundTotals(refunds, chain);
  const left = payment.amount > held ? payment.amount - held : 0n;
  return {
    refunded: toWholeUnits(refunded, decimals),
    pending: toWholeUnits(held - refunded, decimals),
    refundable: toWholeUnits(left, decimals),
    payments: refunds.map((r) => ({
      paymentId: r.id,
      amount: toWholeUnits(r.amount, decimals),
      status: r.status,
      timestamp: r.createdAt,
    })),
  };
}
