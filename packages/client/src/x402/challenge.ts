import { encodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { EXPOSED_HEADERS, PAYMENT_REQUIRED_HEADER } from './headers.ts';

/** A 402 answer: its headers and JSON body. */
export interface PaymentRequiredAnswer {
  readonly status: 402;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

/** x402 v1's PaymentRequirements: the v2 requirement under a v1 network name, with the resource in it. */
export type V1Requirement = {
  readonly scheme: 'exact';
  readonly network: string;
  readonly maxAmountRequired: string;
  readonly resource: string;
  readonly description: string;
  readonly mimeType: string;
  readonly payTo: string;
  readonly maxTimeoutSeconds: number;
  readonly asset: string;
  readonly extra?: Record<string, unknown>;
};

/**
 * The v1 form of an offer's `exact` requirements, for v1 clients (`x402-fetch`, `x402-axios`). x402 v1
 * knows the scheme `exact` only, names networks by name (`solana-devnet`, `base-sepolia`) and on EVM
 * signs EIP-3009 only; its clients validate the whole list and refuse all of it for one entry they do
 * not know. So only `exact` requirements on a network v1 names (`v1NameOf`) that v1 can pay are listed:
 * never gate402's own scheme, a CAIP-2 id, or a Permit2 requirement. Possibly none.
 */
export function v1Requirements(
  offer: PaymentRequired,
  v1NameOf: (network: string) => string | undefined,
): V1Requirement[] {
  const v1: V1Requirement[] = [];
  for (const r of offer.accepts) {
    const network = r.scheme === 'exact' ? v1NameOf(r.network) : undefined;
    if (network === undefined || !v1CanPay(r)) continue;
    v1.push({
      scheme: 'exact',
      network,
      maxAmountRequired: r.amount,
      resource: offer.resource.url,
      description: offer.resource.description ?? '',
      mimeType: offer.resource.mimeType ?? '',
      payTo: r.payTo,
      maxTimeoutSeconds: r.maxTimeoutSeconds,
      asset: r.asset,
      ...(r.extra === undefined ? {} : { extra: r.extra }),
    });
  }
  return v1;
}

/** v1 `exact` moves EVM tokens by EIP-3009 alone, with the token's EIP-712 domain in `extra`. */
function v1CanPay(requirement: PaymentRequirements): boolean {
  if (!requirement.network.startsWith('eip155:')) return true;
  const extra = requirement.extra ?? {};
  return (
    extra.assetTransferMethod === undefined &&
    typeof extra.name === 'string' &&
    typeof extra.version === 'string'
  );
}

/** The 402: the v2 challenge (every option) in PAYMENT-REQUIRED; the body is x402 v1's, for v1 clients. */
export function paymentRequiredAnswer(
  offer: PaymentRequired,
  error: string,
  v1Accepts: readonly V1Requirement[],
): PaymentRequiredAnswer {
  const v2: PaymentRequired = { ...offer, error };
  return {
    status: 402,
    headers: {
      [PAYMENT_REQUIRED_HEADER]: encodePaymentRequiredHeader(v2),
      'Access-Control-Expose-Headers': EXPOSED_HEADERS,
    },
    body: { x402Version: 1, error, accepts: v1Accepts },
  };
}
