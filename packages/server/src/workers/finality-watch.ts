import type { ChainAdapter, ConfirmationOutcome } from '../chains/chain-adapter.ts';
import { ChainError } from '../chains/chain-error.ts';
import type { PaymentRecord } from '../domain/records/payment-records.ts';
import type { PaymentLedger } from '../services/payments/payment-ledger.ts';
import type { PaymentRepository, SettlementRepository } from '../store/store.ts';

/** Told what the watch saw, per network (metrics). Cheap, never throws. */
export interface FinalityObserver {
  /** A confirmed payment's transaction was found gone: resent or reverted (counted once per payment). */
  paymentReorged(network: string): void;
  /** Its stored signed bytes were broadcast again (counted once per payment). */
  paymentResent(network: string): void;
  /** It moved to `reverted`. */
  paymentReverted(network: string): void;
}

export interface FinalityWatchDeps {
  readonly payments: Pick<PaymentRepository, 'get' | 'relocate'>;
  /** Where an x402 settlement's signed bytes are kept; without it facilitator payments are not resent. */
  readonly settlements?: Pick<SettlementRepository, 'findByPayment'> | undefined;
  readonly ledger: Pick<PaymentLedger, 'move'>;
  readonly observer?: FinalityObserver | undefined;
  readonly now: () => number;
}

/** What the watch asks of a chain (a test fake needs only these). */
export type FinalityChain = Pick<
  ChainAdapter,
  | 'finalizedSlot'
  | 'getSignatureStatus'
  | 'getTransaction'
  | 'getBlockHeight'
  | 'broadcast'
  | 'blockHeightOf'
  | 'nonces'
>;

/** What a confirmed payment's record says while its transaction is out of the chain and being resent. */
export const RESENDING_NOTE =
  'its block left the chain; the same signed transaction is being broadcast again';

/**
 * A `confirmed` payment is made `finalized` only when the chain says its transaction is final, and is
 * watched until then: `confirmed` promises a transaction in a block, not one that stays there.
 *
 * The rule against lagging or forked RPC nodes (README "Finality and reorgs"):
 * - only `confirmed` payments are looked at; `finalized` is never re-checked, so no answer of any node
 *   can take a finalized payment back;
 * - `finalized` comes from the chain's own finality (Solana `finalized` commitment; EVM the `finalized`
 *   block tag with the receipt's block the canonical one at its height, else N confirmations);
 * - "not found" proves the transaction gone only when the same pass saw the node's finalized slot at or
 *   past the slot the payment was confirmed in (read before the status, so a node that lags is behind
 *   that slot and proves nothing), and a second look still finds nothing.
 *
 * A transaction gone from the chain:
 * - a custodial send gate402 signed: its stored signed bytes are broadcast again as they are — never
 *   re-signed — while they can still land (Solana: the height is within its blockhash's
 *   lastValidBlockHeight; EVM: its nonce is unused, and since gate402 allocates the wallet's nonces
 *   nothing else of that wallet can use it). Landing again, the payment keeps its id, its state and
 *   its event history, and gets the new slot/block;
 * - a receipt of a payment this gateway sent (sourcePaymentId) follows that payment: it waits while the
 *   send is still confirmed (being resent) and reverts when it has;
 * - anything else once the chain is proven past it: `reverted` (payment.reverted in the same database
 *   transaction), final. A proof naming a reverted payment is refused from then on (ProofVerifier).
 * - landed again but failed (e.g. the funds it spent left with the fork): `reverted`, it paid nothing.
 */
export class FinalityWatch {
  /** Payments already counted as reorged / resent by this process: each is counted once. */
  private readonly reorged = new Set<string>();
  private readonly resent = new Set<string>();

  constructor(private readonly deps: FinalityWatchDeps) {}

  /**
   * @param finalizedSlot the chain's finalized slot, read before this payment's statuses are (the
   * reconciler shares one read per network and pass)
   */
  async check(
    payment: PaymentRecord,
    chain: FinalityChain,
    finalizedSlot: () => Promise<bigint> = () => chain.finalizedSlot(),
  ): Promise<void> {
    if (payment.status !== 'confirmed' || payment.signature === null) return;
    // A receipt of a send this gateway made follows the send: any of the send's transactions is its own.
    const source =
      payment.direction === 'received' && payment.sourcePaymentId !== null
        ? await this.deps.payments.get(payment.sourcePaymentId)
        : undefined;
    const sent = source?.network === payment.network ? source : undefined;
    const signatures = [
      payment.signature,
      ...(payment.replacedSignatures ?? []),
      ...(sent?.signature === null || sent?.signature === undefined ? [] : [sent.signature]),
      ...(sent?.replacedSignatures ?? []),
    ].filter((signature, i, all) => all.indexOf(signature) === i);
    // Read before any status: a node whose finalized slot is past the payment's has seen that block.
    const finalizedAt = await finalizedSlot();
    const landed = await find(signatures, chain);
    if (landed !== undefined) return this.landed(payment, chain, landed.signature, landed.outcome);

    const proven = payment.slot !== null && finalizedAt >= payment.slot;
    const bytes = await this.resendable(payment, chain);
    if (bytes !== undefined) {
      this.count(this.reorged, payment, (o) => o.paymentReorged(payment.network));
      return this.resend(payment, chain, bytes);
    }
    if (!proven) return;
    // The send is still being resent by this gateway: the receipt waits for its outcome.
    if (sent?.status === 'confirmed') return;
    // It may have landed since the first look.
    const again = (await find(signatures, chain)) ?? (await fromLedger(signatures, chain, finalizedAt));
    if (again !== undefined) return this.landed(payment, chain, again.signature, again.outcome);
    this.count(this.reorged, payment, (o) => o.paymentReorged(payment.network));
    const moved = await this.deps.ledger.move(payment, 'reverted', {
      error: `its transaction left the chain (the block at slot ${payment.slot} is not in the finalized chain) and can no longer land; nothing was paid`,
    });
    if (moved !== undefined) this.deps.observer?.paymentReverted(payment.network);
    this.forget(payment);
  }

  private async landed(
    payment: PaymentRecord,
    chain: FinalityChain,
    signature: string,
    outcome: ConfirmationOutcome,
  ): Promise<void> {
    const { ledger, payments } = this.deps;
    if (outcome.status !== 'confirmed' && outcome.status !== 'finalized' && outcome.status !== 'failed')
      return;
    const renamed = signature === payment.signature ? {} : { signature };
    if (outcome.status === 'failed') {
      // Landed again after its block was dropped, but failed this time: it paid nothing.
      const moved = await ledger.move(payment, 'reverted', {
        ...renamed,
        slot: outcome.slot,
        error: `its block left the chain and the transaction landed again, failed: ${outcome.error}`,
      });
      if (moved !== undefined) this.deps.observer?.paymentReverted(payment.network);
      this.forget(payment);
      return;
    }
    const moved = outcome.slot !== payment.slot || signature !== payment.signature;
    const blockHeight = moved
      ? await chain.blockHeightOf(outcome.slot).catch(() => null)
      : (payment.blockHeight ?? (await chain.blockHeightOf(outcome.slot).catch(() => null)));
    const where = { ...renamed, slot: outcome.slot, blockHeight };
    if (outcome.status === 'finalized') {
      await ledger.move(payment, 'finalized', {
        ...where,
        ...(payment.error === RESENDING_NOTE ? { error: null } : {}),
      });
      this.forget(payment);
    } else if (moved || payment.error === RESENDING_NOTE) {
      await payments.relocate(payment.id, { ...where, error: null }, this.deps.now());
    }
  }

  /**
   * Broadcasts the stored signed bytes of a custodial send again, as they are; the payment stays
   * confirmed, noted as being resent, until they land or can no longer.
   */
  private async resend(payment: PaymentRecord, chain: FinalityChain, bytes: Uint8Array): Promise<void> {
    let sent: string | undefined;
    try {
      sent = await chain.broadcast(bytes);
    } catch (error) {
      // Refused now is not refused for good (the node may not have the funds the fork took yet);
      // only the bytes' validity running out ends the resending.
      if (!(error instanceof ChainError)) throw error;
    }
    this.count(this.resent, payment, (o) => o.paymentResent(payment.network));
    // An EVM send settled by an earlier variant (a replacement took its place, then the older one was
    // mined) keeps the newest variant's bytes: that one is resent, and is what to look for from now on.
    const renamed =
      sent !== undefined && payment.signature !== null && sent !== payment.signature
        ? {
            signature: sent,
            replacedSignatures: [...new Set([...(payment.replacedSignatures ?? []), payment.signature])],
          }
        : {};
    if (payment.error !== RESENDING_NOTE || renamed.signature !== undefined)
      await this.deps.payments.relocate(payment.id, { ...renamed, error: RESENDING_NOTE }, this.deps.now());
  }

  /**
   * Signed bytes gate402 stored before their first broadcast, while they can still land; else
   * undefined. Custodial sends: the payment's own (local mode stores the unsigned build, never
   * broadcast by the gateway). x402 settlements the built-in facilitator signed as fee payer: the
   * settlement's, if it is still the transaction the payment names. Still valid: Solana until the height
   * passes the blockhash's lastValidBlockHeight; EVM while the signer's nonce in them is unused
   * (gate402 allocates its wallets' and fee payers' nonces, so nothing else of theirs carries it).
   */
  private async resendable(payment: PaymentRecord, chain: FinalityChain): Promise<Uint8Array | undefined> {
    let signed: { wire: string; lastValidBlockHeight: bigint | null } | undefined;
    if (payment.direction === 'sent' && payment.mode === 'custodial' && payment.signedTransaction !== null) {
      signed = { wire: payment.signedTransaction, lastValidBlockHeight: payment.lastValidBlockHeight };
    } else if (payment.mode === 'facilitator' && this.deps.settlements !== undefined) {
      const settlement = await this.deps.settlements.findByPayment(payment.id);
      if (settlement !== undefined && settlement.transactionId === payment.signature)
        signed = {
          wire: settlement.signedTransaction,
          lastValidBlockHeight: settlement.lastValidBlockHeight,
        };
    }
    if (signed === undefined) return undefined;
    const wire = Buffer.from(signed.wire, 'base64');
    if (chain.nonces !== undefined) {
      const { sender, nonce } = await chain.nonces.signedBy(wire);
      return (await chain.nonces.minedCount(sender)) <= nonce ? wire : undefined;
    }
    const { lastValidBlockHeight } = signed;
    return lastValidBlockHeight !== null && (await chain.getBlockHeight()) <= lastValidBlockHeight
      ? wire
      : undefined;
  }

  private count(seen: Set<string>, payment: PaymentRecord, tell: (o: FinalityObserver) => void): void {
    if (seen.has(payment.id)) return;
    seen.add(payment.id);
    if (this.deps.observer !== undefined) tell(this.deps.observer);
  }

  private forget(payment: PaymentRecord): void {
    this.reorged.delete(payment.id);
    this.resent.delete(payment.id);
  }
}

/** The first of `signatures` the chain knows, with where it stands. */
async function find(
  signatures: readonly string[],
  chain: FinalityChain,
): Promise<{ signature: string; outcome: ConfirmationOutcome } | undefined> {
  for (const signature of signatures) {
    const outcome = await chain.getSignatureStatus(signature);
    if (outcome !== undefined) return { signature, outcome };
  }
  return undefined;
}

/**
 * The last word before `reverted`: the transaction itself, looked up in the node's ledger. A Solana node
 * whose status cache no longer holds an old signature (one without the history of statuses, or a
 * payment not looked at for a long time) answers its status "not found" while its ledger has it; what
 * the ledger holds at or below the finalized slot is final.
 */
async function fromLedger(
  signatures: readonly string[],
  chain: FinalityChain,
  finalizedAt: bigint,
): Promise<{ signature: string; outcome: ConfirmationOutcome } | undefined> {
  for (const signature of signatures) {
    const tx = await chain.getTransaction(signature);
    if (tx === undefined) continue;
    const outcome: ConfirmationOutcome =
      tx.error !== null
        ? { status: 'failed', slot: tx.slot, error: tx.error }
        : { status: tx.slot <= finalizedAt ? 'finalized' : 'confirmed', slot: tx.slot };
    return { signature, outcome };
  }
  return undefined;
}
