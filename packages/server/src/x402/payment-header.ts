import type { PaymentPayload, PaymentPayloadV1 } from '@x402/core/types';

/** An x402 payment header value, decoded: v1 `X-PAYMENT` or v2 `PAYMENT-SIGNATURE`. */
export type X402Header =
  | { readonly x402Version: 1; readonly value: PaymentPayloadV1 }
  | { readonly x402Version: 2; readonly value: PaymentPayload };

/** Larger values are refused before decoding: a Solana payload is about 1 KB, an EVM one under 1 KB. */
export const MAX_X402_HEADER_LENGTH = 16 * 1024;

/**
 * A payment payload nests a few levels (payload, accepted, extra, extensions); thousands of levels,
 * which fit in MAX_X402_HEADER_LENGTH, are not one, and could not even be serialised again to forward
 * it to a facilitator (JSON.stringify runs out of stack).
 */
export const MAX_X402_HEADER_DEPTH = 32;

/**
 * Reads a payment header value (standard base64 of UTF-8 JSON, both versions); undefined when it is not
 * one, so a gate402 proof (`0x…`) or garbage falls through to the next reader.
 */
export function decodeX402Header(text: string): X402Header | undefined {
  const trimmed = text.trim();
  // Base64 of a JSON object begins with 'e' (the high six bits of '{'). Anything else, a gate402 proof
  // (0x…) above all, is refused before decoding it and letting JSON.parse throw, which costs more.
  if (
    trimmed[0] !== 'e' ||
    trimmed.length > MAX_X402_HEADER_LENGTH ||
    !/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)
  ) {
    return undefined;
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(trimmed, 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || !nestsWithin(value, MAX_X402_HEADER_DEPTH))
    return undefined;
  const v = value as Record<string, unknown>;
  const payloadIsObject = typeof v.payload === 'object' && v.payload !== null;
  if (
    v.x402Version === 1 &&
    payloadIsObject &&
    typeof v.scheme === 'string' &&
    typeof v.network === 'string'
  ) {
    return { x402Version: 1, value: value as PaymentPayloadV1 };
  }
  if (v.x402Version === 2 && payloadIsObject && acceptedIsRequirements(v.accepted)) {
    return { x402Version: 2, value: value as PaymentPayload };
  }
  return undefined;
}

/**
 * Whether a v2 payload's `accepted` can be read as PaymentRequirements: its scheme and network are
 * strings, and so are its asset, payTo and amount where given (an absent asset is the network's USDC,
 * an absent amount offers nothing). Anything else in their place is not a payment header.
 */
function acceptedIsRequirements(accepted: unknown): boolean {
  if (typeof accepted !== 'object' || accepted === null || Array.isArray(accepted)) return false;
  const a = accepted as Record<string, unknown>;
  return (
    typeof a.scheme === 'string' &&
    typeof a.network === 'string' &&
    ['asset', 'payTo', 'amount'].every((field) => a[field] === undefined || typeof a[field] === 'string')
  );
}

/** Whether objects and arrays nest at most `levels` deep in `value`; stops looking past that. */
function nestsWithin(value: unknown, levels: number): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (levels === 0) return false;
  return Object.values(value).every((inner) => nestsWithin(inner, levels - 1));
}
