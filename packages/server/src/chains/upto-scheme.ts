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
}

/** The names of the x402 schemes the built-in facilitator serves. */
export type SchemeName = 'exact' | 'upto';

export function isUptoScheme(scheme: ExactScheme): scheme is UptoScheme {
  return (scheme as Partial<UptoScheme>).scheme === 'upto';
}
