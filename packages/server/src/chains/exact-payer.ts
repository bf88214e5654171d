import type { ChainFamily } from '../domain/address.ts';
import type { ChainAdapter } from './chain-adapter.ts';

/**
 * The buyer's side of x402 `exact` on one chain family: a payment payload for a seller's requirement,
 * signed with a custodial wallet's key (POST /payment/x402). The payload is made by the stock x402 client
 * scheme of the family (`@x402/svm`, `@x402/evm`), so what gate402 sends is what any stock buyer sends,
 * and any stock seller and facilitator takes it. Services see plain data: the requirement as the seller
 * wrote it, and the payload as it goes on the wire.
 */
export interface ExactPayer {
  readonly family: ChainFamily;
  /**
   * Why this family cannot pay `requirement` from `wallet` (already of this family), from the requirement
   * alone; undefined when it can. Solana: `extra.feePayer` must name a fee payer that is not the buyer (a
   * buyer as fee payer would sign a complete transaction anyone could send, paying its fees). EVM: the
   * token's EIP-712 domain (`extra.name`, `extra.version`) for EIP-3009; a Permit2 offer is signed once
   * the caller made sure of the wallet's Permit2 allowance (`needsPermit2Approval`).
   */
  refusal(requirement: Readonly<Record<string, unknown>>, wallet: string): string | undefined;
  /**
   * The PaymentPayload (x402 v1 or v2, as the challenge was) paying `requirement`, signed with
   * `secretKey`. The caller zeroes `secretKey` afterwards; nothing here keeps it.
   */
  sign(input: ExactPaymentRequest, secretKey: Uint8Array): Promise<SignedExactPayment>;
}

/** Whether an `exact` requirement moves the tokens through Permit2 (EVM), which the wallet must have approved. */
export function needsPermit2Approval(requirement: Readonly<Record<string, unknown>>): boolean {
  const extra = requirement.extra as Record<string, unknown> | undefined;
  return extra?.assetTransferMethod === 'permit2';
}

export interface ExactPaymentRequest {
  readonly x402Version: 1 | 2;
  /** The seller's requirement as it sent it (v1: with `maxAmountRequired`; network as sent). */
  readonly requirement: Readonly<Record<string, unknown>>;
  /** v2: the challenge's `resource`, repeated in the payload. */
  readonly resource?: Readonly<Record<string, unknown>> | undefined;
}

export interface SignedExactPayment {
  /** The whole PaymentPayload, as the PAYMENT-SIGNATURE (v2) or X-PAYMENT (v1) header carries it. */
  readonly paymentPayload: Readonly<Record<string, unknown>>;
  /** Its inner `payload`: what the facilitator-side scheme (ExactScheme.findPaid) reads. */
  readonly payload: Readonly<Record<string, unknown>>;
  /** The buyer's address that signed. */
  readonly payer: string;
  /**
   * Solana: past this block height the payment can never land (an upper bound, never early); null where
   * the payload ends by time instead.
   */
  readonly lastValidBlockHeight: bigint | null;
  /** EVM: Unix ms after which the authorization can no longer be used (its validBefore); else null. */
  readonly validUntil: number | null;
}

/** The payer of the family of `chain`, reaching the chain the way the family's stock client does. */
export type ExactPayerFactory = (chain: ChainAdapter) => ExactPayer;
