import type { ChainAdapter } from '../chains/chain-adapter.ts';
import { ChainError } from '../chains/chain-error.ts';
import type { NetworkRegistry } from '../chains/network-registry.ts';
import { OPEN_STATUSES } from '../domain/payment-status.ts';
import type { PaymentLedger } from '../services/payment-ledger.ts';
import type { PaymentRecord, Store } from '../store/store.ts';

export interface ReconcilerDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly ledger: PaymentLedger;
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
 * - confirmed: marks it finalized when the chain finalizes it.
 * This is also the crash recovery: a send whose process died after storing is finished here.
 */
export class PaymentReconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private readonly now: () => number;

  constructor(private readonly deps: ReconcilerDeps) {
    this.now = deps.now ?? Date.now;
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
      if (chain !== undefined && payment.signature !== null)
        await this.advance(payment, payment.signature, chain);
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
