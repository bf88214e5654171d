import { encodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { GATE402_NATIVE_SCHEME } from './gate402-native.ts';
import { EXPOSED_HEADERS, PAYMENT_REQUIRED_HEADER } from './headers.ts';

/** A 402 answer: its headers and JSON body. */
export interface PaymentRequiredAnswer {
  readonly status: 402;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

/** The 402: v2 challenge in PAYMENT-REQUIRED, the same offer as a v1 body for v1 clients. */
export function paymentRequiredAnswer(offer: PaymentRequired, error: string): PaymentRequiredAnswer {
  const v2: PaymentRequired = { ...offer, error };
  return {
    status: 402,
    headers: {
      [PAYMENT_REQUIRED_HEADER]: encodePaymentRequiredHeader(v2),
      'Access-Control-Expose-Headers': EXPOSED_HEADERS,
    },
    body: {
      x402Version: 1,
      error,
      // v1 lists the native option only: v1 `exact` clients name networks differently (solana-devnet).
      accepts: offer.accepts
        .filter((r) => r.scheme === GATE402_NATIVE_SCHEME)
        .map((r) => ({
          scheme: r.scheme,
          network: r.network,
          maxAmountRequired: r.amount,
          resource: offer.resource.url,
          description: offer.resource.description ?? '',
          mimeType: offer.resource.mimeType ?? '',
          payTo: r.payTo,
          maxTimeoutSeconds: r.maxTimeoutSeconds,
          asset: r.asset,
          extra: r.extra,
        })),
    },
  };
}
