import type { SettlementRecord } from '../domain/records/settlement-records.ts';
import type { X402Reason } from '../domain/x402-reasons.ts';
import type { ExactScheme } from './exact-scheme.ts';

/**
 * The x402 `upto` scheme on one chain family: the buyer signs a MAXIMUM, the seller settles the ACTUAL
 * amount (at most the maximum, once) after serving the request. The facilitator service drives it
 * exactly as it drives `exact` (one settlement row per payload identity, claimed with the signed
 * transaction before the first broadcast; the same pending, finisher, reorg and fee-budget rules), so
 * the methods are ExactScheme's, with the amount read as follows:
 *
 * - `checkTerms` and `verify`: `requirements.amount` is the maximum the requirements offer (what the
 *   seller's 402 asked the buyer to sign); the payload must sign exactly that maximum.
 * - `prepare` and `findPaid`: `requirements.amount` is the actual amount to settle, 1 ≤ amount ≤
 *   `signedMaximum(payload)`; the service checks the bound (and answers an amount of 0 without the chain,
 *   as x402's upto scheme says) before asking.
 * - `findSettled`: the settlement's own signed transaction names the amount it moves.
 * - `settlementKey` begins with `<network>:upto:`: the service tells a stored settlement's scheme by it.
 *
 * Local mode (a seller submitting itself: `forSeller`, `findLanded`) has no `upto`: the signed witness
 * names the one facilitator allowed to settle. A family offers the scheme through
 * ChainFamilyModule.uptoScheme; GET /facilitator/supported lists it under x402 v2 only.
 */
export interface UptoScheme extends ExactScheme {
  readonly scheme: 'upto';
  /** The reason a settle asking more than the signed maximum is refused with (the stock name on the family). */
  readonly exceedsMaximumReason: X402Reason;
  /**
   * The most the payload lets be settled (its signed maximum) and who signed it; undefined when it does
   * not decode. Says nothing of whether the signature verifies.
   */
  signedMaximum(
    payload: Readonly<Record<string, unknown>>,
  ): { readonly amount: bigint; readonly payer: string } | undefined;
  /** Whether the chain carries what the scheme needs (EVM: Permit2 and x402's upto proxy), as last looked. */
  available(): boolean;
  /** Present where the scheme escrows the maximum first (Solana: x402's payment channel); see UptoEscrow. */
  readonly escrow?: UptoEscrow;
}

/**
 * An `upto` scheme that settles in two phases, each its own settlement (exactly once, with the same
 * claim, pending, finisher and fee-budget rules): the DEPOSIT (before the seller's handler runs: the
 * buyer's signed maximum moves into escrow; `requirements.amount` is that maximum; nothing reaches the
 * seller, so no payment is recorded) and the CLAIM (after it: the actual amount, 0 ≤ actual ≤ maximum,
 * to the seller, the rest back to the buyer, on chain even for 0). The seller says which phase a settle
 * is (`payload.type`). A claim is settled only after the payload's deposit settled, and only for the
 * account that asked for the deposit: nobody else's key can spend a seller's escrow.
 */
export interface UptoEscrow {
  /** The phase a settle payload asks for; undefined when it names none (then it is refused). */
  phaseOf(payload: Readonly<Record<string, unknown>>): 'deposit' | 'claim' | undefined;
  /** The settlement key of the payload's deposit, whichever phase the payload names. */
  depositKey(payload: Readonly<Record<string, unknown>>): string | undefined;
  /** Whether a stored settlement is a deposit (it moved the maximum into escrow, nothing to the seller). */
  isDeposit(settlementKey: string): boolean;
  /**
   * Why a claim may not be made at `now` (Unix ms) against the escrow `deposit` settled, or undefined. The
   * buyer signs only the deposit: a claim payload's own expiry is the seller's to write, so the deadline
   * is the one the deposit was held to when it settled, never a later one the claim names.
   */
  claimRefusal(
    payload: Readonly<Record<string, unknown>>,
    deposit: SettlementRecord,
    now: number,
  ): { readonly reason: X402Reason; readonly message: string } | undefined;
  /**
   * The rent (atomic units of the native currency) one escrow holds of the fee payer's from its deposit:
   * `escrow` comes back when the escrow is claimed or refunded (its token account closed), `account` when
   * its own account is closed — by the sweep's reclaim, once the chain lets it, or by the claim or refund
   * itself when that comes late enough. Counted per account against X402_UPTO_MAX_CHANNEL_RENT.
   */
  rent(): Promise<EscrowRent>;
  /** Whether a stored settlement is a claim (it closed the escrow: the actual amount out, the rest back). */
  isClaim(settlementKey: string): boolean;
  /** Whether the escrow a deposit or claim settlement key names still holds its account (and its rent). */
  holdsAccount(settlementKey: string): Promise<boolean>;
  /**
   * Closes this facilitator's escrows nobody can claim any more (their deposit settled longer ago than
   * a claim may come), the whole deposit back to the buyer, and takes back the rent of closed ones.
   * `depositOf`: a deposit's stored settlement by key (who it was for); `now`: Unix ms. What it did.
   */
  sweep(
    depositOf: (settlementKey: string) => Promise<SettlementRecord | undefined>,
    now: number,
  ): Promise<SweptEscrow[]>;
}

/** What one escrow holds of the fee payer's in rent; see UptoEscrow.rent. */
export interface EscrowRent {
  readonly escrow: bigint;
  readonly account: bigint;
}

/** One escrow the sweep closed (`refunded`: the buyer got the deposit back) or whose rent it took back. */
export interface SweptEscrow {
  readonly escrow: string;
  readonly action: 'refunded' | 'reclaimed';
  readonly transactionId: string;
  /** The settlement key of the escrow's deposit (whose account held the escrow open). */
  readonly deposit: string;
}

/** The names of the x402 schemes the built-in facilitator serves. */
export type SchemeName = 'exact' | 'upto';

export function isUptoScheme(scheme: ExactScheme): scheme is UptoScheme {
  return (scheme as Partial<UptoScheme>).scheme === 'upto';
}
