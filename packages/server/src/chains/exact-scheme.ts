import type { ChainFamily } from '../domain/address.ts';
import type { X402Reason } from '../domain/x402-reasons.ts';

/**
 * The x402 `exact` scheme on one chain family (Solana: an SPL transferChecked the buyer signs and the
 * facilitator pays the fee for; EVM: an EIP-3009 transferWithAuthorization the facilitator submits).
 * Services see plain data: the payload as x402 sends it, requirements with bigint amounts, and wire bytes.
 */
export interface ExactScheme {
  readonly family: ChainFamily;
  /** The facilitator's own addresses that sign and pay fees (GET /facilitator/supported `signers`). */
  signers(): readonly string[];
  /** What `kinds[].extra` says for this family (Solana: the fee payer), if anything. */
  supportedExtra(): Record<string, unknown> | undefined;
  /** The payload extensions it honours (GET /facilitator/supported `extensions`), e.g. EVM gas sponsoring. */
  supportedExtensions?(): readonly string[];
  /**
   * What makes this payment unique, from the payload alone (Solana: the transaction message; EVM: the
   * authorization's signer and nonce): the key of its settlement row. Undefined when the payload is
   * not even decodable.
   */
  settlementKey(payload: Readonly<Record<string, unknown>>): string | undefined;
  /**
   * What the payload pays, against the requirements, from the payload alone (no chain, no clock): that
   * it decodes, the token, the recipient and the amount, and what must be read to find them. Undefined
   * when they match. Callers ask this before looking up whether the payload was settled or consumed:
   * a payload that does not pay these requirements is refused for that whatever became of it, so
   * nobody it does not pay learns that it was used. The clock (validity windows) and the signature are
   * left to `verify`: a payload settled for these requirements stays a duplicate after it expires, so
   * the request that settled it can still find its payment. `verify` makes these checks too, first.
   */
  checkTerms(
    payload: Readonly<Record<string, unknown>>,
    requirements: ExactRequirements,
  ): Promise<ExactRefusal | undefined>;
  /**
   * Every check short of broadcasting, including a simulation against the chain now. `sellerPays`:
   * local mode, where the seller's wallet (`requirements.payTo`'s owner, named in `extra.feePayer`)
   * pays the fee and broadcasts instead of this facilitator.
   */
  verify(
    payload: Readonly<Record<string, unknown>>,
    requirements: ExactRequirements,
    options?: { readonly sellerPays?: boolean },
  ): Promise<ExactVerdict>;
  /**
   * What settling a verified payload needs from the chain, asked now (fees, block height, the
   * facilitator's pending EVM transaction count); the transaction is signed by the returned draft.
   */
  prepare(
    payload: Readonly<Record<string, unknown>>,
    requirements: ExactRequirements,
  ): Promise<SettlementDraft>;
  /**
   * Local mode (POST /transaction/receive): the unsigned transaction the seller (`requirements.payTo`)
   * signs as fee payer and broadcasts itself, for a payload verified with `sellerPays`; undefined for a
   * payload whose kind the seller cannot submit itself.
   */
  forSeller?(
    payload: Readonly<Record<string, unknown>>,
    requirements: ExactRequirements,
  ): Promise<SellerTransaction | undefined>;
  /**
   * Local mode: the payment `forSeller` built, as it landed on chain (whoever broadcast it); `never`
   * once it provably can never land (Solana: past `lastValidBlockHeight`; EVM: the authorization's
   * validBefore, or the Permit2 permit's deadline, passed unused); undefined while it may still land. `builtAt` (Unix ms): when `forSeller`
   * built it; nothing older needs looking at.
   */
  findLanded?(
    built: Uint8Array,
    lastValidBlockHeight: bigint,
    builtAt: number,
  ): Promise<LandedPayment | 'never' | undefined>;
  /**
   * The facilitator's settlement whose own transaction is not mined (dropped from the pool, its nonce
   * taken by another transaction) or reverted: the transaction that carried its payment — its own or
   * anyone's, since the buyer's signature fixes recipient and amount — `never` once it provably can
   * never be carried (EVM: a block stamped at the authorization's validBefore, or past the permit's
   * deadline, exists and it is still unused), undefined while it may still be. `claimedAt` (Unix ms):
   * when the settlement was claimed, the payload unused then. Absent where the settlement's own
   * transaction expires by itself (Solana: its blockhash).
   */
  findSettled?(signed: Uint8Array, claimedAt: number): Promise<LandedPayment | 'never' | undefined>;
  /**
   * The payload's payment as it landed on chain, whoever submitted it — a facilitator elsewhere whose
   * answer was lost, or that refuses it now because it settled it before: Solana, a transaction with the
   * payload's message; EVM, the use of its authorization (Permit2: the spending of its nonce through
   * x402's proxy). `since` (Unix ms): nothing landed earlier is looked for. Undefined when none is found.
   * Call it for a payload whose terms (checkTerms) pay the requirements: the payment found pays those.
   * `payer`: the buyer who signed the payload.
   */
  findPaid?(
    payload: Readonly<Record<string, unknown>>,
    requirements: ExactRequirements,
    since: number,
  ): Promise<(LandedPayment & { readonly payer: string }) | undefined>;
  /**
   * EVM, an EIP-3009 payload (`requirements.asset` its token): how its authorization ended, as the chain
   * itself shows it — never this gateway's clock, and never a node's head alone (a node that lags, or a
   * chain whose blocks stalled, still takes an authorization the clock calls dead). Once the chain's
   * finalized block (`finalizedSlot`) is stamped at or after validBefore, no later block can use it and
   * no block it could have been used in can be reorganised away: its state there is final. `unused`:
   * authorizationState(from, nonce) false at that block (nothing was ever paid with it); `used`: true.
   * Undefined while the finalized block is stamped before validBefore (the chain may still take it), and
   * for a payload that is not EIP-3009 (Permit2 has UptoPayer.permitEnded).
   */
  authorizationEnded?(
    payload: Readonly<Record<string, unknown>>,
    requirements: ExactRequirements,
    finalizedSlot: bigint,
  ): Promise<'unused' | 'used' | undefined>;
  /**
   * EVM, x402's erc20ApprovalGasSponsoring: whether the buyer's approval (`wire`, its signed bytes), not
   * mined, can never be now — the buyer's nonce moved past it.
   */
  approvalSuperseded?(wire: Uint8Array): Promise<boolean>;
  /**
   * EVM, x402's erc20ApprovalGasSponsoring: whether the buyer who signed the approval (`wire`) has
   * approved Permit2 for at least `amount` of the approval's token now — whatever transaction did it.
   * `minedIn`: the block (slot) the approval was seen mined in; the answer is read at or after it, and
   * the call throws (deciding nothing) on a node not there yet.
   */
  approvalCovers?(wire: Uint8Array, amount: bigint, minedIn?: bigint): Promise<boolean>;
}

export interface SellerTransaction {
  /**
   * Wire bytes without the seller's signature: Solana, the buyer's transaction with the fee payer's
   * slot empty; EVM, an unsigned EIP-1559 transaction from the seller submitting the authorization (the
   * token's transferWithAuthorization, or x402's Permit2 proxy's settle).
   */
  readonly unsigned: Uint8Array;
  /**
   * Solana: past this block height the transaction can never land (an upper bound, never early). EVM:
   * gate402's deadline as for local-mode sends (the block at building + 150); the authorization's own
   * validBefore (Permit2: the permit's deadline) is what ends the payment.
   */
  readonly lastValidBlockHeight: bigint;
  /**
   * When it can no longer land (Unix ms), when the payload itself sets a limit: an absolute time, so the
   * payment's expiresAt never outlives the buyer's signature however long building took.
   */
  readonly validUntil?: number;
  /**
   * The most the seller pays the network for it, atomic units of the native currency; undefined when
   * the chain cannot price it (Solana: the buyer's blockhash is already gone).
   */
  readonly fee: bigint | undefined;
}

export interface LandedPayment {
  /** Signature (Solana) or hash (EVM) of the landed transaction. */
  readonly transactionId: string;
  readonly slot: bigint;
  /** Why it failed on chain; null for success. */
  readonly error: string | null;
  /** What its fee payer paid the network, atomic units. */
  readonly fee: bigint;
}

export interface ExactRequirements {
  /** The configured network that carries it (an alias already resolved). */
  readonly network: string;
  readonly asset: string;
  /** Atomic units of the asset, exactly what must be paid. */
  readonly amount: bigint;
  readonly payTo: string;
  readonly maxTimeoutSeconds: number;
  readonly extra: Readonly<Record<string, unknown>>;
}

export type ExactVerdict =
  | { readonly valid: true; readonly payer: string; readonly decimals: number }
  | { readonly valid: false; readonly reason: X402Reason; readonly message: string; readonly payer?: string };

/**
 * A settlement ready to sign. The caller signs it inside the database transaction that claims the
 * settlement (and, on EVM, allocates the nonce): `sign` does no network work, so that transaction
 * waits on storage only and never holds the database on the chain.
 */
export interface SettlementDraft {
  /**
   * The most the facilitator's fee payer can pay the network for this transaction, atomic units of the
   * native currency, as the transaction sets it (Solana: signatures × 5,000 lamports + compute-unit
   * price × limit; EVM: gas limit × max fee per gas). Reserved against the asking account's daily fee
   * budget before anything is signed or broadcast.
   */
  readonly maxFee: bigint;
  /** EVM: the facilitator's address and the chain's pending transaction count, the nonce's floor. */
  readonly nonceFloor?: { readonly address: string; readonly pending: bigint };
  /** `nonce`: allocated from `nonceFloor` (EVM); undefined where the chain has no nonces (Solana). */
  sign(nonce: bigint | undefined): Promise<PreparedSettlementTx>;
  /**
   * EVM, x402's erc20ApprovalGasSponsoring: the buyer's approval to broadcast before the settlement,
   * funded first. `maxFee` then counts it too: the funding transfer's fee and the amount it gives.
   */
  readonly sponsoredApproval?: SponsoredApprovalDraft;
}

export interface SponsoredApprovalDraft {
  /** The approval's identity (network, buyer, its nonce): funded for one settlement at most. */
  readonly key: string;
  /** The buyer, who signed it. */
  readonly payer: string;
  /** The buyer's signed approval transaction, and its hash. */
  readonly wire: Uint8Array;
  readonly transactionId: string;
  /**
   * The fee payer's transfer of `amount` (what the buyer lacks for the approval's gas) to the buyer,
   * signed with its own nonce, allocated before the settlement's; absent when the buyer holds enough.
   */
  readonly funding?: {
    readonly amount: bigint;
    sign(nonce: bigint): Promise<PreparedSettlementTx>;
  };
  /**
   * The fee payer's 0-value transfer to itself at `nonce` (the settlement's), at the settlement's fees:
   * sent instead of the settlement when the approval did not take effect (SponsoredApprovalStep.voided).
   */
  signVoid(nonce: bigint): Promise<PreparedSettlementTx>;
}

export interface PreparedSettlementTx {
  readonly payer: string;
  /** Signature (Solana) or hash (EVM) of `wire`, known before it is broadcast. */
  readonly transactionId: string;
  readonly wire: Uint8Array;
  /** Past this block height the transaction can never land (Solana); null when it never expires by itself. */
  readonly lastValidBlockHeight: bigint | null;
  /** EVM: the facilitator's nonce this transaction took, with the address it belongs to. */
  readonly nonce?: { readonly address: string; readonly value: bigint };
}

export type ExactRefusal = Extract<ExactVerdict, { valid: false }>;

/** A verdict refusing the payload with an x402 reason code. */
export function refuse(reason: X402Reason, message: string, payer?: string): ExactRefusal {
  return payer === undefined ? { valid: false, reason, message } : { valid: false, reason, message, payer };
}
