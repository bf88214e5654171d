import type { AccountNonces, ChainAdapter, ConfirmationOutcome } from '../chains/chain-adapter.ts';
import { ChainError } from '../chains/chain-error.ts';
import type { PaymentRecord } from '../domain/records/payment-records.ts';
import type { PaymentLedger } from '../services/payments/payment-ledger.ts';
import type { WalletService } from '../services/wallets/wallet-service.ts';
import type { Store } from '../store/store.ts';

export interface SequencedSendDeps {
  readonly store: Store;
  readonly ledger: PaymentLedger;
  /** Opens a custodial key to sign a replacement; without it a stuck transaction is only resent. */
  readonly wallets?: Pick<WalletService, 'signer'> | undefined;
  readonly now: () => number;
}

/**
 * The most times one payment is replaced. Each replacement bids at least 10% more, so this bounds what
 * a payment that cannot land (its wallet emptied elsewhere) can come to bid: at most 1.1^10 ≈ 2.6× the
 * fees of the first, unless the network itself asks more. After that its last transaction is resent.
 */
export const MAX_REPLACEMENTS = 10;

/**
 * A custodial send on a chain with nonces (EVM), moved on by the reconciler. Every transaction of the
 * payment carries the payment's nonce, and a chain puts at most one transaction per (sender, nonce) in
 * a block, so:
 * - any of its transactions (the current one or one it replaced) being mined settles the payment with
 *   that transaction; one payment can never pay twice;
 * - not mined: the current signed bytes are resent as they are; once they have waited the chain's
 *   replacement policy (`replacementDue`, counted in blocks), or at once if the node holds them with
 *   the next nonce but will never mine them (`stranded`), a replacement with the same nonce and
 *   higher fees is signed, stored with the old hash remembered, and only then broadcast;
 * - `expired` only once the nonce is used by a transaction that is none of the payment's: until then
 *   any of its transactions could still be mined, however late.
 * This is the one place the gateway signs on its own after a send: a replacement moves the same amount
 * to the same recipient under the same nonce, so it can take the old transaction's place, never add to it.
 */
export class SequencedSendReconciler {
  constructor(private readonly deps: SequencedSendDeps) {}

  async advance(
    payment: PaymentRecord,
    signature: string,
    chain: ChainAdapter,
    nonces: AccountNonces,
  ): Promise<void> {
    const nonce = payment.nonce ?? 0n;
    const replaced = payment.replacedSignatures ?? [];
    // The mined count is read before the hashes are looked up: if it is past the nonce and none of
    // the hashes is mined afterwards, the nonce went to some other transaction, for good.
    const mined = await nonces.minedCount(payment.sender);
    for (const hash of [signature, ...replaced]) {
      const outcome = await chain.getSignatureStatus(hash);
      if (outcome !== undefined) return this.settle(payment, chain, hash, outcome);
    }
    // Confirmed payments are FinalityWatch's (resent or reverted there); never expired from here.
    if (payment.status === 'confirmed') return;
    if (mined > nonce) {
      await this.deps.ledger.move(payment, 'expired', {
        error: `nonce ${nonce} was used by another transaction; this payment paid nothing`,
      });
      return;
    }

    let current: PaymentRecord | undefined = payment;
    if (
      this.deps.wallets !== undefined &&
      payment.lastValidBlockHeight !== null &&
      replaced.length < MAX_REPLACEMENTS &&
      (nonces.replacementDue(payment.lastValidBlockHeight, await chain.getBlockHeight()) ||
        // Resending cannot move a transaction the node holds but will never mine (the node refuses
        // the same bytes as known), and waiting for the policy's blocks may be forever: a chain that
        // mines only on demand (anvil without a block time) makes none while the sender's sends
        // wait behind it. A replacement is the one way out, so it is due at once.
        (mined === nonce && (await nonces.stranded(payment.sender, nonce, signature))))
    ) {
      current = await this.replace(payment, signature, chain, nonces, this.deps.wallets);
      // Another worker replaced or settled it first: its turn.
      if (current === undefined) return;
    }
    if (current.signedTransaction === null) return;
    try {
      await chain.broadcast(Buffer.from(current.signedTransaction, 'base64'));
    } catch (error) {
      // Refused now is not refused for good (funds may arrive; a replacement may be priced too low
      // while the old one waits): only a used nonce ends the payment.
      if (!(error instanceof ChainError) || error.kind !== 'already_processed') return;
    }
    if (current.status === 'pending') await this.deps.ledger.move(current, 'submitted');
  }

  private async settle(
    payment: PaymentRecord,
    chain: ChainAdapter,
    hash: string,
    outcome: ConfirmationOutcome,
  ): Promise<void> {
    const { ledger } = this.deps;
    // The transaction that landed becomes the payment's signature, whichever variant it was.
    const signature = hash === payment.signature ? {} : { signature: hash };
    if (outcome.status === 'confirmed' || outcome.status === 'finalized') {
      if (payment.status === outcome.status && hash === payment.signature) return;
      if (payment.status === 'confirmed' && outcome.status === 'confirmed') return;
      const blockHeight = await chain.blockHeightOf(outcome.slot).catch(() => null);
      await ledger.move(payment, outcome.status, {
        ...signature,
        slot: outcome.slot,
        blockHeight,
        ...(payment.confirmedAt === null ? { confirmedAt: this.deps.now() } : {}),
      });
    } else if (outcome.status === 'failed') {
      await ledger.move(payment, 'failed', { ...signature, slot: outcome.slot, error: outcome.error });
    }
  }

  /** Signs a replacement and stores it in the payment's place (compare-and-set on the signature). */
  private async replace(
    payment: PaymentRecord,
    signature: string,
    chain: ChainAdapter,
    nonces: AccountNonces,
    wallets: Pick<WalletService, 'signer'>,
  ): Promise<PaymentRecord | undefined> {
    if (payment.signedTransaction === null) return payment;
    const prepared = await nonces.prepareReplacement(Buffer.from(payment.signedTransaction, 'base64'));
    if (prepared.nonce !== payment.nonce) {
      throw new Error(`payment ${payment.id}: the replacement does not carry the payment's nonce`);
    }
    const signer = await wallets.signer(payment.accountId, payment.walletAddress);
    let signed: Awaited<ReturnType<ChainAdapter['sign']>>;
    try {
      signed = await chain.sign(prepared, signer.secretKey);
    } finally {
      signer.secretKey.fill(0);
    }
    // Stored before it is broadcast, like the first transaction: a crash now only delays its resend.
    return this.deps.store.payments.replaceTransaction(
      payment.id,
      signature,
      {
        signature: signed.signature,
        signedTransaction: Buffer.from(signed.wire).toString('base64'),
        lastValidBlockHeight: signed.lastValidBlockHeight,
        fee: prepared.fee,
        replacedSignatures: [...(payment.replacedSignatures ?? []), signature],
      },
      this.deps.now(),
    );
  }
}
