import type { ChainAdapter } from '../chains/chain-adapter.ts';
import { ChainError } from '../chains/chain-error.ts';
import type { NetworkRegistry } from '../chains/network-registry.ts';
import { OPEN_STATUSES } from '../domain/payment-status.ts';
import type { PaymentRecord } from '../domain/records/payment-records.ts';
import { PeriodicWorker } from '../scheduling/periodic-worker.ts';
import { LocalModeConfirmation } from '../services/payments/local/local-confirmation.ts';
import type { PaymentLedger } from '../services/payments/payment-ledger.ts';
import { isHeldRefund } from '../services/payments/refunds/held-refund.ts';
import { HeldRefundRelease } from '../services/payments/refunds/held-refund-release.ts';
import { isX402Receipt, type X402LocalReceiveService } from '../services/payments/x402/x402-local-receive.ts';
import { isX402Purchase, type X402PayService } from '../services/payments/x402/x402-pay.ts';
import type { WalletService } from '../services/wallets/wallet-service.ts';
import type { Store } from '../store/store.ts';
import { type FinalityObserver, FinalityWatch } from './finality-watch.ts';
import { SequencedSendReconciler } from './sequenced-send-reconciler.ts';

export interface ReconcilerDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly ledger: PaymentLedger;
  /** Signs replacements of stuck EVM sends (see SequencedSendReconciler); without it they are only resent. */
  readonly wallets?: Pick<WalletService, 'signer'>;
  /** Watches x402 payloads given to /transaction/receive; without it their pending payments are left alone. */
  readonly x402Receipts?: Pick<X402LocalReceiveService, 'watch'>;
  /** Watches x402 payments signed for custodial wallets (POST /payment/x402); without it they stay pending. */
  readonly x402Purchases?: Pick<X402PayService, 'watch'>;
  /** Names this process in leases. */
  readonly instanceId: string;
  readonly intervalMs?: number;
  /** A lease outlives a pass by far; if this process dies, another takes over once it lapses. */
  readonly leaseMs?: number;
  /** How long a payment that did not change waits before it is looked at again. */
  readonly recheckMs?: number;
  readonly batchSize?: number;
  /**
   * How long a local-mode payment stays watched after it was marked expired, for a transaction that
   * lands late (EVM: signed bytes stay valid until their nonce is used); default 10 minutes.
   */
  readonly lateLandingWatchMs?: number;
  /** How often an expired payment under that watch is looked at again; default 15 s. */
  readonly lateLandingRecheckMs?: number;
  readonly log?: (message: string, error?: unknown) => void;
  readonly now?: () => number;
  /** Counts reorged, resent and reverted payments (metrics). */
  readonly finality?: FinalityObserver | undefined;
}

/**
 * About 256 blocks on Base (2 s) and 50 on Ethereum: while the EVM adapter's scan window still holds
 * a transaction mined in that time. Each look at an expired payment costs a scan, hence the slow recheck.
 */
const LATE_LANDING_WATCH_MS = 10 * 60_000;
const LATE_LANDING_RECHECK_MS = 15_000;

/**
 * Moves open payments forward in the background, on every instance at once without stepping on each
 * other (each payment is leased to one worker at a time):
 * - pending/submitted with a stored signed transaction: looks the signature up; if the chain does not
 *   know it and its blockhash is still valid, resends the same bytes — it never signs anything, so a
 *   payment can land only once — and once the chain's height passes lastValidBlockHeight without it,
 *   marks it expired;
 * - confirmed: marks it finalized when the chain finalizes it, and watches it until then: a
 *   transaction that left the chain is resent (same bytes) or the payment reverted (FinalityWatch);
 * - local mode, pending (the caller signs and broadcasts; the gateway never does): finds the transaction
 *   by its reference and checks it is the one built (a tampered copy never counts); once it can no
 *   longer land (see mayStillLand), marks it expired. A seller's pending receipt confirms when the
 *   receipt lands, and the buyer's proof is consumed in the same database transaction; if the proof
 *   was used meanwhile, the receipt payment fails.
 * - local mode, expired within lateLandingWatchMs: looked at again now and then; a transaction that
 *   landed after all moves the payment expired → confirmed (payment.confirmed follows payment.expired),
 *   and a late receipt consumes the proof if it is still unused.
 * - x402 payments signed for custodial wallets (POST /payment/x402), pending: the seller's facilitator
 *   submits them; found on chain by their payload and confirmed, or expired once they can no longer land.
 * - EVM custodial sends (a nonce from the database): see SequencedSendReconciler — resent, replaced with
 *   higher fees when stuck, settled by whichever of their transactions is mined, expired only once
 *   their nonce is used by another transaction.
 * - a refund held until the payment it refunds is final (refunds/held-refund.ts): signed and sent once
 *   that payment is finalized, cancelled if it never will be (HeldRefundRelease).
 * This is also the crash recovery: a send whose process died after storing is finished here.
 */
export class PaymentReconciler {
  private readonly now: () => number;
  private readonly sequenced: SequencedSendReconciler;
  private readonly finality: FinalityWatch;
  private readonly local: LocalModeConfirmation;
  private readonly heldRefunds: HeldRefundRelease;
  private readonly worker: PeriodicWorker;

  constructor(private readonly deps: ReconcilerDeps) {
    this.now = deps.now ?? Date.now;
    this.sequenced = new SequencedSendReconciler({
      store: deps.store,
      ledger: deps.ledger,
      wallets: deps.wallets,
      now: this.now,
    });
    this.finality = new FinalityWatch({
      payments: deps.store.payments,
      settlements: deps.store.settlements,
      ledger: deps.ledger,
      observer: deps.finality,
      now: this.now,
    });
    this.local = new LocalModeConfirmation({ store: deps.store, ledger: deps.ledger, now: this.now });
    this.heldRefunds = new HeldRefundRelease({
      store: deps.store,
      networks: deps.networks,
      ledger: deps.ledger,
      wallets: deps.wallets,
    });
    this.worker = new PeriodicWorker(() => this.runOnce(), {
      intervalMs: deps.intervalMs ?? 1_000,
      onError: (error) => deps.log?.('payment reconciler pass failed', error),
    });
  }

  start(): void {
    this.worker.start();
  }

  stop(): Promise<void> {
    return this.worker.stop();
  }

  /** One pass; returns how many payments it looked at. */
  async runOnce(): Promise<number> {
    const at = this.now();
    const until = at + (this.deps.leaseMs ?? 60_000);
    const limit = this.deps.batchSize ?? 50;
    // One transaction for all the leases: on SQLite each lease would otherwise be a commit of its own.
    const [open, expired] = await this.deps.store.transaction(async ({ payments }) => [
      await payments.lease(this.deps.instanceId, OPEN_STATUSES, at, until, limit),
      await payments.leaseExpired(
        this.deps.instanceId,
        'local',
        at - (this.deps.lateLandingWatchMs ?? LATE_LANDING_WATCH_MS),
        at,
        until,
        limit,
      ),
    ]);
    // One read of each network's finalized slot per pass, shared by every confirmed payment on it.
    const finalized = new Map<string, Promise<bigint>>();
    await Promise.all([...open, ...expired].map((payment) => this.reconcile(payment, finalized)));
    return open.length + expired.length;
  }

  private async reconcile(payment: PaymentRecord, finalized: Map<string, Promise<bigint>>): Promise<void> {
    try {
      const chain = this.deps.networks.get(payment.network);
      if (chain === undefined) return;
      if (payment.status === 'confirmed') {
        await this.finality.check(payment, chain, () => {
          let slot = finalized.get(payment.network);
          if (slot === undefined) {
            slot = chain.finalizedSlot();
            // Each check awaits it; this keeps a failed read from being reported as unhandled meanwhile.
            slot.catch(() => {});
            finalized.set(payment.network, slot);
          }
          return slot;
        });
      } else if (isX402Purchase(payment)) {
        // The seller's facilitator broadcasts it: found on chain by its payload, never resent from here.
        if (payment.status === 'pending') await this.deps.x402Purchases?.watch(payment, chain);
      } else if (isX402Receipt(payment)) {
        // No reference to find it by, and expired only once it can never land: nothing late to watch.
        if (payment.status === 'pending') await this.deps.x402Receipts?.watch(payment, chain);
      } else if (payment.status === 'expired') {
        await this.local.watchExpired(payment, chain);
      } else if (payment.mode === 'local' && payment.status === 'pending') {
        await this.local.watchPending(payment, chain);
      } else if (isHeldRefund(payment)) {
        await this.heldRefunds.advance(payment, chain);
      } else if (payment.signature !== null) {
        if (chain.nonces !== undefined && payment.nonce !== undefined && payment.nonce !== null) {
          await this.sequenced.advance(payment, payment.signature, chain, chain.nonces);
        } else await this.advance(payment, payment.signature, chain);
      }
    } catch (error) {
      this.deps.log?.(`could not reconcile payment ${payment.id}`, error);
    } finally {
      const recheckMs =
        payment.status === 'expired'
          ? (this.deps.lateLandingRecheckMs ?? LATE_LANDING_RECHECK_MS)
          : (this.deps.recheckMs ?? 2_000);
      // In a transaction, so the releases of one pass share a commit (SQLite's group commit).
      const recheckAt = this.now() + recheckMs;
      await this.deps.store.transaction((tx) =>
        tx.payments.releaseLease(payment.id, this.deps.instanceId, recheckAt),
      );
    }
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
