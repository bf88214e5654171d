import type { ChainAdapter, PreparedTransaction } from './chain-adapter.ts';
import type { ExactPayer } from './exact-payer.ts';

/**
 * The buyer's side of x402 `upto` on one chain family, for a custodial wallet (POST /payment/x402): the
 * wallet signs a MAXIMUM with the family's stock x402 client, and the seller's facilitator settles the
 * actual amount, at most that, once. Where the scheme moves tokens through an allowance the wallet must
 * have granted first (EVM: the token's allowance to Permit2), the payer reads it and prepares the
 * wallet's own transaction granting it; the caller sends that exactly once per wallet and token.
 */
export interface UptoPayer extends ExactPayer {
  /** The signed maximum and signer of a payload this payer signed; undefined when it does not decode. */
  signedMaximum(payload: Readonly<Record<string, unknown>>): bigint | undefined;
  /** What the wallet lets the scheme move of `token` now (EVM: allowance(wallet, Permit2)), atomic units. */
  allowance(wallet: string, token: string): Promise<bigint>;
  /**
   * The wallet's unsigned transaction granting the scheme all of `token` (EVM: approve(Permit2, 2^256-1)),
   * paid by the wallet in the native currency (`fee`: the most it can cost). Its nonce (where the chain
   * has nonces) is the node's pending count, a floor: the caller allocates the wallet's nonce as it stores it.
   */
  prepareApproval(wallet: string, token: string): Promise<PreparedTransaction>;
  /**
   * The settlement of a payload this payer signed, as it landed on chain (whoever sent it): its
   * transaction and the ACTUAL amount it moved to the payload's payee (at most the signed maximum);
   * undefined while none is found. `since` (Unix ms): nothing landed earlier is looked for.
   */
  findSettlement(
    payload: Readonly<Record<string, unknown>>,
    since: number,
  ): Promise<UptoSettlementFound | undefined>;
  /**
   * Whether the chain shows the payload's permit used (EVM: its Permit2 nonce spent) at `block` (default
   * the latest), whoever used it: a payment whose permit is used was settled and is never expired, even
   * while its transfer is not found. The payload of an upto payment this payer signed, or of an `exact`
   * payment through Permit2 (this payer sends the approval both share); false for any other.
   */
  nonceSpent(payload: Readonly<Record<string, unknown>>, block?: bigint): Promise<boolean>;
  /**
   * A permit used (nonceSpent) though no transaction carrying it was recognised (upto: findSettlement;
   * exact through Permit2: ExactScheme.findPaid): the transfer to the payee in the block where it was
   * used (exact: of the signed amount), whoever sent that transaction; undefined while the permit is
   * unused, or when no such transfer is seen.
   */
  findBySpentNonce(
    payload: Readonly<Record<string, unknown>>,
    since: number,
  ): Promise<UptoSettlementFound | undefined>;
  /**
   * How the permit ended, as the chain itself shows it — never this gateway's clock, and never a node's
   * head alone (a node that lags, or a chain whose blocks stalled, still takes a permit the clock calls
   * dead): once the chain's finalized block (`finalizedSlot`) is stamped past the permit's deadline, no
   * later block can use it and no block it could have been used in can be reorganised away; its state
   * there is final. `unused`: its nonce unspent at that block (nothing was ever paid with it); `used`:
   * spent by then. undefined while the finalized block is not past the deadline (the chain may still take it).
   */
  permitEnded(
    payload: Readonly<Record<string, unknown>>,
    finalizedSlot: bigint,
  ): Promise<'unused' | 'used' | undefined>;
  /**
   * The block where the permit was used (the first showing it used, at or after `since`, Unix ms);
   * undefined when it is unused or the node cannot say (no state that old).
   */
  nonceSpentBlock(payload: Readonly<Record<string, unknown>>, since: number): Promise<bigint | undefined>;
}

export interface UptoSettlementFound {
  readonly transactionId: string;
  readonly slot: bigint;
  /** What the settlement moved, atomic units of the token. */
  readonly amount: bigint;
}

/** The payer of the family of `chain`. */
export type UptoPayerFactory = (chain: ChainAdapter) => UptoPayer;
