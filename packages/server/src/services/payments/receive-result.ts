// The answers a seller gets from a receive and from a simple verification, shared by every way a payment
// is checked (gate402 proofs, x402 payloads settled here or by another facilitator), so those checkers do not
// import one another.
import { toWholeUnits } from '../../domain/money.ts';
import type { PaymentRecord } from '../../domain/records/payment-records.ts';
import type { PaymentAsset } from './payment-asset.ts';

/** Spec §2.3. */
export interface ReceiveResult {
  success: true;
  verified: true;
  paymentId: string;
  signature: string;
  amountReceived: number;
  sender: string;
  status: string;
  blockHeight: number | null;
  timestamp: number;
  verificationTime: string;
  network: string;
  /** What `amountReceived` is in. */
  asset: PaymentAsset;
}

/**
 * The answer to a receive (spec §2.3) that recorded `payment`, paid in `asset` (the one the request
 * stated, which the payment was checked to be in); `started` is when verification began.
 */
export function receiveResult(payment: PaymentRecord, asset: PaymentAsset, started: number): ReceiveResult {
  return {
    success: true,
    verified: true,
    paymentId: payment.id,
    signature: payment.signature ?? '',
    amountReceived: toWholeUnits(payment.amount, asset.decimals),
    sender: payment.sender,
    status: payment.status,
    blockHeight: payment.blockHeight === null ? null : Number(payment.blockHeight),
    timestamp: payment.createdAt,
    verificationTime: `${Math.round(performance.now() - started)}ms`,
    network: payment.network,
    asset: { ...asset },
  };
}

/** Spec §4.5: a refusal is an answer with a stable reason, not an error. */
export type VerifyResult =
  | { verified: true; transaction_id: string; network: string; asset: PaymentAsset }
  | { verified: false; reason: string; message: string };
