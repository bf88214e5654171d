import type { PaymentRequirements } from '@x402/core/types';

/**
 * gate402's x402 scheme for native-currency payments (SOL, ETH), which x402's `exact` does not cover.
 *
 * - Requirements: `scheme: "gate402-native"`, `network` a CAIP-2 id (in v1 too), `asset: "native"`,
 *   `amount` (v1: `maxAmountRequired`) in atomic units (lamports, wei), `payTo` the seller's wallet,
 *   `extra: {currency, decimals}` for people (buyers take decimals from their own gateway).
 * - Payload: `{paymentProof: "0x…"}`, the proof `POST /payment/send` answers. The seller redeems it with
 *   `POST /payment/receive` on its gateway, which checks the transfer on chain and accepts a proof once.
 */
export const GATE402_NATIVE_SCHEME = 'gate402-native';

/** The `asset` of a native-currency requirement. */
export const NATIVE_ASSET = 'native';

export interface Gate402NativePayload {
  readonly paymentProof: string;
}

export function isGate402NativePayload(payload: unknown): payload is Gate402NativePayload {
  return (
    typeof payload === 'object' &&
    payload !== null &&
    typeof (payload as { paymentProof?: unknown }).paymentProof === 'string'
  );
}

/** True when a buyer's `accepted` requirement is the one offered (the same scheme, network, asset, amount and payee). */
export function sameRequirement(offered: PaymentRequirements, accepted: unknown): boolean {
  if (typeof accepted !== 'object' || accepted === null) return false;
  const a = accepted as Partial<Record<keyof PaymentRequirements, unknown>>;
  return (
    a.scheme === offered.scheme &&
    a.network === offered.network &&
    a.asset === offered.asset &&
    a.amount === offered.amount &&
    a.payTo === offered.payTo
  );
}
