import { toWholeUnits } from '../../domain/money.ts';
import type { PaymentRecord } from '../../domain/records/payment-records.ts';
import type { PaymentAsset } from './payment-asset.ts';
import { HELD_UNTIL_ORIGINAL_FINALIZED, isHeldRefund } from './refunds/held-refund.ts';
import type { RefundsView } from './refunds/refund-totals.ts';
import { isPermit2Approval } from './x402/permit2-approval-record.ts';

/** A payment as the API shows it (spec §2.1): amounts in whole units of its asset, times in Unix ms. */
export interface PaymentView {
  paymentId: string;
  /** `refund`: a payment back to the payer of one the account received (POST /payment/refund). */
  type: 'sent' | 'received' | 'refund';
  network: string;
  signature: string | null;
  status: string;
  amount: number;
  sender: string;
  recipient: string;
  resource?: string;
  blockHeight: number | null;
  confirmations: number;
  timestamp: number;
  metadata?: Record<string, unknown>;
  /** What `amount` is in: the native currency (`address: null`) or a token (x402 `exact`). */
  asset: PaymentAsset;
  /** On a refund: the payment it refunds. */
  refundOf?: string;
  /** On a refund: the reason the caller gave. */
  refundReason?: string;
  /** On a refund held until the payment it refunds is finalized (docs/refunds.md): nothing is sent yet. */
  heldUntil?: typeof HELD_UNTIL_ORIGINAL_FINALIZED;
  /** On a refund that failed: why (e.g. cancelled while held, the refunded payment reverted). */
  failureReason?: string;
  /** On a received payment (status): what was refunded of it and what still can be. */
  refunds?: RefundsView;
}

/**
 * @param asset the payment's (assetOfPayment).
 * @param currentBlockHeight the chain's height now; confirmations count the payment's own block as 1.
 */
export function paymentView(
  payment: PaymentRecord,
  asset: PaymentAsset,
  currentBlockHeight?: bigint,
): PaymentView {
  const view: PaymentView = {
    paymentId: payment.id,
    type: payment.refundOf === undefined ? payment.direction : 'refund',
    network: payment.network,
    signature: payment.signature,
    status: payment.status,
    amount: toWholeUnits(payment.amount, asset.decimals),
    sender: payment.sender,
    recipient: payment.recipient,
    blockHeight: payment.blockHeight === null ? null : Number(payment.blockHeight),
    confirmations: confirmations(payment.blockHeight, currentBlockHeight),
    timestamp: payment.createdAt,
    asset: { ...asset },
  };
  if (payment.resource !== null) view.resource = payment.resource;
  if (payment.metadata !== null) view.metadata = { ...payment.metadata };
  // A wallet's Permit2 approval pays no one: what it cost is its network fee, shown beside what it is.
  if (view.metadata !== undefined && isPermit2Approval(payment)) {
    view.metadata.permit2Approval = {
      ...(view.metadata.permit2Approval as object),
      fee: toWholeUnits(payment.fee ?? 0n, asset.decimals),
    };
  }
  if (payment.refundOf !== undefined) view.refundOf = payment.refundOf;
  if (payment.refundReason !== undefined) view.refundReason = payment.refundReason;
  if (isHeldRefund(payment)) view.heldUntil = HELD_UNTIL_ORIGINAL_FINALIZED;
  if (payment.refundOf !== undefined && payment.status === 'failed' && payment.error !== null)
    view.failureReason = payment.error;
  return view;
}

function confirmations(blockHeight: bigint | null, current: bigint | undefined): number {
  if (blockHeight === null || current === undefined || current < blockHeight) return 0;
  return Number(current - blockHeight) + 1;
}
