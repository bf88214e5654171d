// The two ways a payment proof is refused, shared by every checker of proofs.
import { GatewayError } from '../../../domain/gateway-error.ts';

/** The proof is malformed, for another payment, or names what the seller did not ask for (400). */
export function invalidProof(message: string, reason?: string): GatewayError {
  return new GatewayError('INVALID_PAYMENT_PROOF', {
    message: `Invalid payment proof: ${message}.`,
    details: { paymentProof: reason ?? message },
  });
}

/** The proof is well formed but the chain does not show the payment it claims. */
export function verificationFailed(
  message: string,
  reason: string,
  options: { readonly final?: boolean } = {},
): GatewayError {
  return new GatewayError('PAYMENT_VERIFICATION_FAILED', {
    message: `Payment verification failed: ${message}.`,
    details: { paymentProof: reason },
    ...(options.final === undefined ? {} : { final: options.final }),
  });
}
