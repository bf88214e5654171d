import type { PaymentDirection, PaymentMode, PaymentStatus } from '../payment-status.ts';

// Payments as storage holds them: amounts in bigint atomic units, times in Unix milliseconds.

export interface PaymentRecord {
  readonly id: string;
  readonly accountId: string;
  readonly direction: PaymentDirection;
  readonly mode: PaymentMode;
  readonly status: PaymentStatus;
  readonly network: string;
  /** The account's own wallet: the sender of a sent payment, the recipient of a received one. */
  readonly walletAddress: string;
  readonly sender: string;
  readonly recipient: string;
  readonly amount: bigint;
  /** Network fee paid by the sender, when known. */
  readonly fee: bigint | null;
  readonly resource: string | null;
  readonly metadata: Readonly<Record<string, unknown>> | null;
  /** The transaction signature (Solana) or hash (EVM), once known. */
  readonly signature: string | null;
  /** The read-only address that finds a local-mode transaction on chain. */
  readonly reference: string | null;
  /**
   * Base64 wire bytes of the signed transaction, kept so a restart resends the same bytes. Local mode:
   * the unsigned bytes as built (never broadcast by the gateway), so a retried build answers the same.
   */
  readonly signedTransaction: string | null;
  readonly lastValidBlockHeight: bigint | null;
  /** Unix ms after which an unsigned local-mode transaction must not be sent. */
  readonly expiresAt: number | null;
  readonly slot: bigint | null;
  readonly blockHeight: bigint | null;
  readonly error: string | null;
  /** For a received payment: the sender's payment id named in the proof. */
  readonly sourcePaymentId: string | null;
  readonly idempotencyKey: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly confirmedAt: number | null;
  /** EVM custodial sends: the nonce allocated to this payment; every variant of it carries it. */
  readonly nonce?: bigint | null;
  /**
   * EVM custodial sends: hashes of earlier transactions of this payment that a replacement (same nonce,
   * higher fees) took the place of, oldest first. Any of them may still be the one that lands.
   */
  readonly replacedSignatures?: readonly string[];
  /**
   * A payment in a token (x402 `exact`: an SPL mint or ERC-20 contract) rather than the native
   * currency; `amount` is then in the token's atomic units. Absent: native currency.
   */
  readonly asset?: { readonly address: string; readonly decimals: number };
  /** A refund (#30): the received payment it gives back, whose payer it pays. Absent on other payments. */
  readonly refundOf?: string;
  /** A refund: why, as the caller said. */
  readonly refundReason?: string;
}

/** One refund of a payment, as the refund total is summed from (PaymentRepository.refundsOf). */
export interface RefundSummary {
  readonly id: string;
  readonly status: PaymentStatus;
  readonly mode: PaymentMode;
  readonly amount: bigint;
  readonly createdAt: number;
}

export type PaymentChanges = Partial<
  Pick<
    PaymentRecord,
    | 'signature'
    // x402 `upto` (POST /payment/x402): recorded at the signed maximum, then at what the chain shows settled.
    | 'amount'
    | 'signedTransaction'
    | 'lastValidBlockHeight'
    | 'slot'
    | 'blockHeight'
    | 'error'
    | 'fee'
    | 'confirmedAt'
    | 'replacedSignatures'
    | 'nonce'
  >
>;

/**
 * What a history entry shows of a payment (spec §2.4): lists read only these columns of each row, not
 * the whole record (its signed transaction, metadata, leases), a third of a page's cost.
 */
export type PaymentSummary = Pick<
  PaymentRecord,
  | 'id'
  | 'direction'
  | 'status'
  | 'network'
  | 'sender'
  | 'recipient'
  | 'amount'
  | 'resource'
  | 'signature'
  | 'createdAt'
  | 'asset'
  | 'refundOf'
>;
