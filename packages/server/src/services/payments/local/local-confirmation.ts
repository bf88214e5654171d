import type { ChainAdapter, ChainTransaction } from '../../../chains/chain-adapter.ts';
import type { PaymentRecord } from '../../../domain/records/payment-records.ts';
import type { Store } from '../../../store/store.ts';
import type { PaymentLedger } from '../payment-ledger.ts';
import { findBuiltReceipt, findBuiltTransfer, receiptMemo } from './local-transfer.ts';

export interface LocalModeConfirmationDeps {
  readonly store: Store;
  readonly ledger: PaymentLedger;
  readonly now: () => number;
}

/**
 * How local mode's payments move on: a transaction the caller signed and broadcast itself (a local send)
 * or a receipt the seller signed (POST /transaction/receive) is found on chain by its reference, confirmed
 * or failed as it landed, expired once it can no longer land, and confirmed late if it lands after that.
 * The payment reconciler asks this for every local-mode payment it leases.
 */
export class LocalModeConfirmation {
  constructor(private readonly deps: LocalModeConfirmationDeps) {}

  private now(): number {
    return this.deps.now();
  }

  /** A pending local-mode payment: its transaction or receipt is looked for on chain. */
  async watchPending(payment: PaymentRecord, chain: ChainAdapter): Promise<void> {
    if (payment.direction === 'sent') await this.watchSend(payment, chain);
    else await this.watchReceipt(payment, chain);
  }

  /**
   * An expired local-mode payment whose transaction may still have landed. Only a successful landing
   * changes it: a failed one paid nothing, and a receipt whose proof was redeemed meanwhile stays expired.
   */
  async watchExpired(payment: PaymentRecord, chain: ChainAdapter): Promise<void> {
    if (payment.direction === 'sent') {
      const tx = await findBuiltTransfer(chain, builtTransferOf(payment));
      if (tx !== undefined && tx.error === null) await this.confirmLocalSend(payment, chain, tx);
      return;
    }
    const receipt = await findBuiltReceipt(chain, builtReceiptOf(payment));
    if (receipt !== undefined && receipt.error === null) await this.acceptReceipt(payment, 'late');
  }

  private async watchSend(payment: PaymentRecord, chain: ChainAdapter): Promise<void> {
    const built = builtTransferOf(payment);
    let tx = await findBuiltTransfer(chain, built);
    if (tx === undefined) {
      if (await this.mayStillLand(payment, chain, payment.sender)) return;
      // It can no longer land: look once more, since it may have landed just before.
      tx = await findBuiltTransfer(chain, built);
      if (tx === undefined) {
        await this.deps.ledger.move(payment, 'expired', {
          error: 'the transaction was not seen on chain before it expired',
        });
        return;
      }
    }
    if (tx.error !== null) {
      await this.deps.ledger.move(payment, 'failed', {
        signature: tx.signature,
        slot: tx.slot,
        blockHeight: await chain.blockHeightOf(tx.slot).catch(() => null),
        error: tx.error,
      });
      return;
    }
    await this.confirmLocalSend(payment, chain, tx);
  }

  /** From pending, or from expired when it landed late (the error that said it expired is cleared). */
  private async confirmLocalSend(
    payment: PaymentRecord,
    chain: ChainAdapter,
    tx: ChainTransaction,
  ): Promise<void> {
    await this.deps.ledger.move(payment, 'confirmed', {
      signature: tx.signature,
      slot: tx.slot,
      blockHeight: await chain.blockHeightOf(tx.slot).catch(() => null),
      fee: tx.fee,
      error: null,
      confirmedAt: this.now(),
    });
  }

  /** A seller's receipt (POST /transaction/receive): the proof is consumed when, and only if, it lands. */
  private async watchReceipt(payment: PaymentRecord, chain: ChainAdapter): Promise<void> {
    const built = builtReceiptOf(payment);
    let receipt = await findBuiltReceipt(chain, built);
    if (receipt === undefined || receipt.error !== null) {
      if (await this.mayStillLand(payment, chain, payment.walletAddress)) return;
      // It can no longer land: look once more, since it may have landed just before.
      receipt ??= await findBuiltReceipt(chain, built);
      if (receipt === undefined || receipt.error !== null) {
        await this.deps.ledger.move(payment, 'expired', {
          error: 'the receipt was not seen on chain before it expired; the proof is still unused',
        });
        return;
      }
    }
    await this.acceptReceipt(payment, 'in time');
  }

  /**
   * The receipt landed: the buyer's proof is consumed with the move to confirmed, in one database
   * transaction. A proof redeemed elsewhere first fails a receipt that landed in time; one that landed
   * late (after it was called expired, when the proof was free to be redeemed) just stays expired.
   */
  private async acceptReceipt(payment: PaymentRecord, landed: 'in time' | 'late'): Promise<void> {
    const { ledger, store } = this.deps;
    const at = this.now();
    await store.transaction(async (tx) => {
      const proofKey = `${payment.network}:${payment.signature}`;
      if (await tx.proofs.consume(proofKey, payment.id, payment.accountId, at)) {
        await ledger.moveIn(tx, payment, 'confirmed', { confirmedAt: at, error: null });
      } else if (landed === 'in time') {
        await ledger.moveIn(tx, payment, 'failed', {
          error: 'the payment proof was redeemed elsewhere before this receipt landed',
        });
      }
    });
  }

  /**
   * Whether a local-mode transaction not seen yet may still land, so the payment must stay pending.
   * - Solana (no nonces): the chain accepts it until the height passes `lastValidBlockHeight` (its
   *   blockhash) and refuses it for good after, whatever the clock says; `expiresAt` tells the caller
   *   when to stop sending, it does not end the transaction. So only the blockhash ends the payment.
   * - EVM: nothing on chain ends it (signed bytes stay valid until their nonce is used), so gate402's
   *   own deadline applies: until `expiresAt`, and after it, while the payer (the buyer of a local
   *   send, the seller of a receipt) has transactions waiting in the node's pool and
   *   `lastValidBlockHeight` is not passed — one broadcast in time may still be waiting for a block.
   *   Anything mined later still counts: the late-landing watch moves the payment on.
   */
  private async mayStillLand(payment: PaymentRecord, chain: ChainAdapter, payer: string): Promise<boolean> {
    const withinBlockhash =
      payment.lastValidBlockHeight === null
        ? undefined
        : (await chain.getBlockHeight()) <= payment.lastValidBlockHeight;
    const beforeExpiresAt = payment.expiresAt === null || this.now() <= payment.expiresAt;
    if (chain.nonces === undefined) return withinBlockhash ?? beforeExpiresAt;
    if (withinBlockhash === false) return false;
    return beforeExpiresAt || (withinBlockhash === true && (await chain.nonces.hasWaiting(payer)));
  }
}

function builtTransferOf(payment: PaymentRecord) {
  return {
    reference: payment.reference ?? '',
    payer: payment.sender,
    recipient: payment.recipient,
    asset: payment.asset?.address ?? null,
    amount: payment.amount,
    memo: payment.id,
    lastValidBlockHeight: payment.lastValidBlockHeight,
  };
}

function builtReceiptOf(payment: PaymentRecord) {
  return {
    reference: payment.reference ?? '',
    payer: payment.walletAddress,
    memo: receiptMemo(payment.id, payment.sourcePaymentId ?? ''),
    lastValidBlockHeight: payment.lastValidBlockHeight,
  };
}
