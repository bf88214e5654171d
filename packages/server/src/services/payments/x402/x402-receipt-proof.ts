/** Marks a consumed proof as an x402 payload's identity (its settlement key). */
export const X402_RECEIPT_PROOF_PREFIX = 'x402:';

/**
 * The consumed-proof key of an x402 payload's identity: whoever records the payment of a payload
 * carried by a transaction the facilitator did not sign (a seller's local receipt, or a settlement
 * whose authorization someone else submitted) consumes it first, so one transfer is recorded once.
 */
export function x402ReceiptProofKey(identity: string): string {
  return `${X402_RECEIPT_PROOF_PREFIX}${identity}`;
}
