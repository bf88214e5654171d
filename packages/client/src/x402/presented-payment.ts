import { GATE402_NATIVE_SCHEME } from './gate402-native.ts';
import { PAYMENT_SIGNATURE_HEADER, X_PAYMENT_HEADER } from './headers.ts';
import { decodeHeaderJson } from './wire.ts';

/** A payment that arrived in a request header, before it is checked. */
export interface PresentedPayment {
  /** Which answer header the buyer reads: v2 PAYMENT-RESPONSE, v1 X-PAYMENT-RESPONSE. */
  readonly version: 1 | 2;
  readonly scheme: unknown;
  readonly network: unknown;
  /** v2 only: the requirement the buyer says it paid. */
  readonly accepted?: unknown;
  readonly payload: unknown;
  /** The decoded header, as the facilitator takes it. */
  readonly decoded: Record<string, unknown>;
}

/** The payment in PAYMENT-SIGNATURE (v2) or X-PAYMENT (v1, or a bare gate402 proof as in spec §1); a string says what is wrong. */
export function readPresentedPayment(
  header: (name: string) => string | undefined,
): PresentedPayment | string | undefined {
  const v2 = header(PAYMENT_SIGNATURE_HEADER);
  if (v2 !== undefined && v2 !== '') {
    const decoded = decodeHeaderJson(v2);
    if (decoded === undefined) return `${PAYMENT_SIGNATURE_HEADER} is not base64 JSON`;
    const accepted = decoded.accepted as Record<string, unknown> | undefined;
    return {
      version: 2,
      scheme: accepted?.scheme,
      network: accepted?.network,
      accepted,
      payload: decoded.payload,
      decoded,
    };
  }
  const v1 = header(X_PAYMENT_HEADER);
  if (v1 === undefined || v1 === '') return undefined;
  // The spec's own pattern: the proof from POST /payment/send, as it is, in X-PAYMENT.
  if (v1.startsWith('0x')) {
    const payload = { paymentProof: v1 };
    return { version: 1, scheme: GATE402_NATIVE_SCHEME, network: undefined, payload, decoded: { payload } };
  }
  const decoded = decodeHeaderJson(v1);
  if (decoded === undefined) return `${X_PAYMENT_HEADER} is neither a gate402 proof nor base64 JSON`;
  return { version: 1, scheme: decoded.scheme, network: decoded.network, payload: decoded.payload, decoded };
}
