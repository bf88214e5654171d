import type { ChainFamily } from '../address.ts';

// The built-in x402 facilitator's signers, settlements and the network fees it sponsored.

/** A fee-payer key of the built-in x402 facilitator, sealed like a custodial wallet key. */
export interface FacilitatorSignerRecord {
  readonly address: string;
  readonly family: ChainFamily;
  readonly encryptedSecret: string;
  readonly createdAt: number;
}

/**
 * claimed: the signed transaction is stored, not known to be broadcast; submitted: broadcast, not yet
 * confirmed; settled: confirmed on chain; failed: landed with an error or can no longer land.
 */
export type SettlementStatus = 'claimed' | 'submitted' | 'settled' | 'failed';

/** One x402 settlement, keyed by what makes the payment unique (its transaction or authorization). */
export interface SettlementRecord {
  readonly key: string;
  readonly network: string;
  readonly payer: string;
  readonly payTo: string;
  readonly asset: string;
  /** Atomic units of the asset. */
  readonly amount: bigint;
  /** The transaction that settles it (Solana signature, EVM hash): known before broadcast. */
  readonly transactionId: string;
  /** Base64 wire bytes, stored before the first broadcast so a retry resends exactly these. */
  readonly signedTransaction: string;
  readonly lastValidBlockHeight: bigint | null;
  readonly status: SettlementStatus;
  readonly error: string | null;
  /** The received payment recorded for the payTo wallet's account, once settled (if any owns it). */
  readonly paymentId: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  /**
   * The POST /payment/receive with an Idempotency-Key that claimed it, stored with the claim (before the
   * first broadcast): the settlement finisher gives the payment it records that key (see
   * FacilitatorService.markSettled). Absent or null: claimed by another caller, or without a key.
   */
  readonly claimedBy?: SettlementClaimant | null;
  /** What the payment was for (see X402Payment.resource), carried by the seller's payment. */
  readonly resource?: string | null;
  /**
   * The account whose API key asked to settle it, stored with the claim: its payment is recorded for
   * this account, and for nobody else, whoever moves the row (a retry, the finisher after a crash).
   * Null: claimed before accounts were kept (see FacilitatorService.recorderOf).
   */
  readonly accountId?: string | null;
  /**
   * The network fee charged to `accountId`'s daily budget for it (see SponsoredFeeRepository): the
   * worst case while open, the fee actually paid once landed, 0 once it can never land. Null: none kept.
   */
  readonly sponsoredFee?: SponsoredFee | null;
  /**
   * x402's `erc20ApprovalGasSponsoring` (EVM): the step before its transaction, stored with the claim
   * (before anything is broadcast). Absent or null: the settlement has no such step.
   */
  readonly sponsoredApproval?: SponsoredApprovalStep | null;
}

/**
 * The buyer's signed `approve(Permit2)` transaction the facilitator broadcasts before settling, and the
 * transfer from its fee payer that funds the buyer's gas shortfall for it first (none when the buyer
 * holds enough). Bytes are base64, as `signedTransaction`: resent as they are, they land at most once.
 */
export interface SponsoredApprovalStep {
  readonly approvalTransaction: string;
  readonly approvalTransactionId: string;
  readonly fundingTransaction: string | null;
  readonly fundingTransactionId: string | null;
  /** Atomic units of the native currency the funding transfer gives the buyer (0 without one). */
  readonly funded: bigint;
  /**
   * The fee payer's 0-value transfer to itself at the settlement's own nonce, signed with the claim:
   * sent instead of the settlement when the buyer's approval did not take effect (superseded, or without
   * the allowance), so the settlement can never be mined and revert, and the fee payer's nonce sequence
   * keeps no gap. Absent on steps claimed before it existed (their settlement is sent all the same).
   */
  readonly voidTransaction?: string | null;
  readonly voidTransactionId?: string | null;
  /** Set (before the void transfer is first sent) once the settlement is given up for it: never undone. */
  readonly voided?: boolean;
}

/** A fee charged to an account's budget of one UTC day, in atomic units of the network's native currency. */
export interface SponsoredFee {
  /** `YYYY-MM-DD`, UTC: the day whose budget it was charged to (a correction goes to the same day). */
  readonly day: string;
  readonly amount: bigint;
}

/** A request's account and its Idempotency-Key. */
export interface SettlementClaimant {
  readonly accountId: string;
  readonly idempotencyKey: string;
}
