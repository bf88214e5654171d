import type { ChainAdapter } from '../chains/chain-adapter.ts';
import { ChainError } from '../chains/chain-error.ts';
import type { NetworkRegistry } from '../chains/network-registry.ts';
import { OPEN_STATUSES } from '../domain/payment-status.ts';
import { findBuiltReceipt, findBuiltTransfer, receiptMemo } from '../services/local-transfer.ts';
import type { PaymentLedger } from '../services/payment-ledger.ts';
import type { WalletService } from '../services/wallet-service.ts';
import type { PaymentRecord, Store } from '../store/store.ts';
import { SequencedSendReconciler } from './sequenced-send-reconciler.ts';

export interface ReconcilerDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly ledger: PaymentLedger;
  /** Signs replacements of stuck EVM sends (see SequencedSendReconciler); without it they are only resent. */
  readonly wallets?: Pick<WalletService, 'signer'>;
  /** Names this process in leases. */
  readonly instanceId: string;
  readonly intervalMs?: number;
  /** A lease outlives a pass by far; if this process dies, another takes over once it lapses. */
  readonly leaseMs?: number;
  /** How long a payment that did not change waits before it is looked at again. */
  readonly recheckMs?: number;
  readonly batchSize?: number;
  readonly log?: (message: string, error?: unknown) => void;
  readonly now?: () => number;
}

/**
 * Moves open payments forward in the background, on every instance at once without stepping on each
 * other (each payment is leased to one worker at a time):
 * - pending/submitted with a stored signed transaction: looks the signature up; if the chain does not
 *   know it and its blockhash is still valid, resends the same bytes — it never signs anything, so a
 *   payment can land only once — and once the chain's height passes lastValidBlockHeight without it,
 *   marks it expired;
 * - confirmed: marks it finalized when the chain finalizes it;
 * - local mode, pending (the caller signs and broadcasts; the gateway never does): finds the transaction
 *   by its reference and checks it is the one built (a tampered copy never counts); once
 *   lastValidBlockHeight or expiresAt has passed without it, marks it expired. A seller's pending
 *   receipt confirms when the receipt lands, and the buyer's proof is consumed in the same database
 *   transaction; if the proof was used meanwhile, the receipt payment fails.
 * - EVM custodial sends (a nonce from the database): see SequencedSendReconciler — resent, replaced with
 *   higher fees when stuck, settled by whichever of their transactions is mined, expired only once
 *   their nonce is used by another transaction.
 * This is also the crash recovery: a send whose process died after storing is finished here.
 */
export class PaymentReconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private readonly now: () => number;
  private readonly sequenced: SequencedSendReconciler;

  constructor(private readonly deps: ReconcilerDeps) {
    this.now = deps.now ?? Date.now;
    this.sequenced = new SequencedSendReconciler({
      store: deps.store,
      ledger: deps.ledger,
      wallets: deps.wallets,
      now: this.now,
    });
  }

  start(): void {
    const tick = () => {
      this.running = this.runOnce()
        .catch((error: unknown) => this.deps.log?.('payment reconciler pass failed', error))
        .finally(() => {
          if (this.timer !== undefined) this.timer = setTimeout(tick, this.deps.intervalMs ?? 1_000);
        });
    };
    this.timer = setTimeout(tick, this.deps.intervalMs ?? 1_000);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One pass; returns how many payments it looked at. */
  async runOnce(): Promise<number> {
    const at = this.now();
    const leased = await this.deps.store.payments.lease(
      this.deps.instanceId,
      OPEN_STATUSES,
      at,
      at + (this.deps.leaseMs ?? 60_000),
      this.deps.batchSize ?? 50,
    );
    await Promise.all(leased.map((payment) => this.reconcile(payment)));
    return leased.length;
  }

  private async reconcile(payment: PaymentRecord): Promise<void> {
    try {
      const chain = this.deps.networks.get(payment.network);
      if (chain === undefined) return;
      if (payment.mode === 'local' && payment.status === 'pending') {
        if (payment.direction === 'sent') await this.watchLocalSend(payment, chain);
        else await this.watchReceipt(payment, chain);
      } else if (payment.signature !== null) {
        if (chain.nonces !== undefined && payment.nonce !== undefined && payment.nonce !== null) {
          await this.sequenced.advance(payment, payment.signature, chain, chain.nonces);
        } else await this.advance(payment, payment.signature, chain);
      }
    } catch (error) {
      this.deps.log?.(`could not reconcile payment ${payment.id}`, error);
    } finally {
      await this.deps.store.payments.releaseLease(
        payment.id,
        this.deps.instanceId,
        this.now() + (this.deps.recheckMs ?? 2_000),
      );
    }
  }

  private async watchLocalSend(payment: PaymentRecord, chain: ChainAdapter): Promise<void> {
    const built = {
      reference: payment.reference ?? '',
      payer: payment.sender,
      recipient: payment.recipient,
      amount: payment.amount,
      memo: payment.id,
      lastValidBlockHeight: payment.lastValidBlockHeight,
    };
    let tx = await findBuiltTransfer(chain, built);
    if (tx === undefined) {
      if (!(await this.isPast(payment, chain))) return;
      if (await this.mayStillBeMined(payment, chain, payment.sender)) return;
      // Past its validity: look once more, since it may have landed just before.
      tx = await findBuiltTransfer(chain, built);
      if (tx === undefined) {
        await this.deps.ledger.move(payment, 'expired', {
          error: 'the transaction was not seen on chain before it expired',
        });
        return;
      }
    }
    const blockHeight = await chain.blockHeightOf(tx.slot).catch(() => null);
    if (tx.error !== null) {
      await this.deps.ledger.move(payment, 'failed', {
        signature: tx.signature,
        slot: tx.slot,
        blockHeight,
        error: tx.error,
      });
      return;
    }
    await this.deps.ledger.move(payment, 'confirmed', {
      signature: tx.signature,
      slot: tx.slot,
      blockHeight,
      fee: tx.fee,
      confirmedAt: this.now(),
    });
  }

  /** A seller's receipt (POST /transaction/receive): the proof is consumed when, and only if, it lands. */
  private async watchReceipt(payment: PaymentRecord, chain: ChainAdapter): Promise<void> {
    const built = {
      reference: payment.reference ?? '',
      payer: payment.walletAddress,
      memo: receiptMemo(payment.id, payment.sourcePaymentId ?? ''),
      lastValidBlockHeight: payment.lastValidBlockHeight,
    };
    let receipt = await findBuiltReceipt(chain, built);
    if (receipt === undefined && (await this.isPast(payment, chain)))
      receipt = await findBuiltReceipt(chain, built);
    if (receipt === undefined || receipt.error !== null) {
      if (!(await this.isPast(payment, chain))) return;
      if (receipt === undefined && (await this.mayStillBeMined(payment, chain, payment.walletAddress)))
        return;
      await this.deps.ledger.move(payment, 'expired', {
        error: 'the receipt was not seen on chain before it expired; the proof is still unused',
      });
      return;
    }
    const { ledger, store } = this.deps;
    const at = this.now();
    await store.transaction(async (tx) => {
      const proofKey = `${payment.network}:${payment.signature}`;
      if (await tx.proofs.consume(proofKey, payment.id, payment.accountId, at)) {
        await ledger.moveIn(tx, payment, 'confirmed', { confirmedAt: at });
      } else {
        await ledger.moveIn(tx, payment, 'failed', {
          error: 'the payment proof was redeemed elsewhere before this receipt landed',
        });
      }
    });
  }

  /**
   * EVM: nothing on chain ends a transaction at `expiresAt` (signed bytes stay valid until their nonce
   * is used), so one the caller broadcast in time may still wait in the pool for a block. While the
   * payer (the buyer of a local send, the seller of a receipt) has transactions waiting and
   * `lastValidBlockHeight` is not passed, the payment stays pending rather than be called expired and
   * then be mined.
   */
  private async mayStillBeMined(
    payment: PaymentRecord,
    chain: ChainAdapter,
    payer: string,
  ): Promise<boolean> {
    if (chain.nonces === undefined || payment.lastValidBlockHeight === null) return false;
    if ((await chain.getBlockHeight()) > payment.lastValidBlockHeight) return false;
    return chain.nonces.hasWaiting(payer);
  }

  /** Whether a local-mode transaction can no longer be sent: its expiresAt or blockhash is past. */
  private async isPast(payment: PaymentRecord, chain: ChainAdapter): Promise<boolean> {
    if (payment.expiresAt !== null && this.now() > payment.expiresAt) return true;
    return (
      payment.lastValidBlockHeight !== null && (await chain.getBlockHeight()) > payment.lastValidBlockHeight
    );
  }

  private async advance(payment: PaymentRecord, signature: string, chain: ChainAdapter): Promise<void> {
    const { ledger } = this.deps;
    const outcome = await chain.getSignatureStatus(signature);
    if (outcome?.status === 'confirmed' || outcome?.status === 'finalized') {
      if (payment.status === 'confirmed' && outcome.status === 'confirmed') return;
      const blockHeight = payment.blockHeight ?? (await chain.blockHeightOf(outcome.slot).catch(() => null));
      await ledger.move(payment, outcome.status, {
        slot: outcome.slot,
        blockHeight,
        ...(payment.confirmedAt === null ? { confirmedAt: this.now() } : {}),
      });
      return;
    }
    if (outcome?.status === 'failed') {
      await ledger.move(payment, 'failed', { slot: outcome.slot, error: outcome.error });
      return;
    }
    if (payment.status === 'confirmed' || payment.lastValidBlockHeight === null) return;

    if ((await chain.getBlockHeight()) > payment.lastValidBlockHeight) {
      // It can no longer land; look once more, since it may have landed just before the blockhash expired.
      if ((await chain.getSignatureStatus(signature)) === undefined) {
        await ledger.move(payment, 'expired', { error: 'blockhash expired before the transaction landed' });
      }
      return;
    }
    if (payment.signedTransaction === null) return;
    try {
      await chain.broadcast(Buffer.from(payment.signedTransaction, 'base64'));
    } catch (error) {
      // Refused now is not refused for good (funds may arrive before the blockhash expires):
      // only the height passing lastValidBlockHeight ends a payment that never landed.
      if (!(error instanceof ChainError) || error.kind !== 'already_processed') return;
    }
    if (payment.status === 'pending') await ledger.move(payment, 'submitted');
  }
}
