import { PeriodicWorker } from '../scheduling/periodic-worker.ts';
import type { FacilitatorService } from '../services/facilitator/facilitator-service.ts';
import type { Store } from '../store/store.ts';

export interface SettlementFinisherDeps {
  readonly store: Store;
  readonly facilitator: Pick<FacilitatorService, 'finish'>;
  /** Names this process in the job lease. */
  readonly instanceId: string;
  /**
   * A settle waits this long for confirmation (PAYMENT_CONFIRM_TIMEOUT_MS); a settlement unchanged for
   * longer is one no settle call is looking at any more.
   */
  readonly settleWaitMs: number;
  /** How often a pass runs (on the instance holding the lease); default 1 s. */
  readonly intervalMs?: number;
  /**
   * How long one pass holds the job: no other instance runs a pass until it runs out, and if this
   * process dies another takes over then. Default 5 s.
   */
  readonly leaseMs?: number;
  /** How long a pass waits for each settlement's transaction; default 2 s. */
  readonly waitMs?: number;
  readonly batchSize?: number;
  readonly log?: (message: string, error?: unknown) => void;
  readonly now?: () => number;
}

/** The job lease's name: one instance at a time finishes open settlements. */
const JOB = 'x402-settlement-finisher';

/**
 * Finishes the built-in facilitator's settlements that were left open: a settle that answered
 * `settlement_pending` and was never called again, or a process that died between claiming a
 * settlement and seeing it confirm. Each pass, on the one instance holding the job's lease, looks at
 * the stored transaction of every open settlement untouched for longer than a settle waits, exactly
 * as a retried settle would (FacilitatorService.finish): the same bytes are resent, never a second
 * transaction; it becomes settled — the seller's payment and its event recorded as by a settle that
 * confirmed in time — or failed once it landed with an error or provably expired. Everything it needs
 * is in the settlement row, so a restart loses nothing; and since every move is a compare-and-set,
 * a settle retry or an overlapping pass at the same moment moves each settlement once.
 */
export class SettlementFinisher {
  private readonly now: () => number;
  private readonly worker: PeriodicWorker;

  constructor(private readonly deps: SettlementFinisherDeps) {
    this.now = deps.now ?? Date.now;
    this.worker = new PeriodicWorker(() => this.runOnce(), {
      intervalMs: deps.intervalMs ?? 1_000,
      onError: (error) => deps.log?.('settlement finisher pass failed', error),
    });
  }

  start(): void {
    this.worker.start();
  }

  stop(): Promise<void> {
    return this.worker.stop();
  }

  /** One pass; how many open settlements it looked at (0 when another instance holds the job). */
  async runOnce(): Promise<number> {
    const { store } = this.deps;
    const at = this.now();
    if (!(await store.jobLeases.claim(JOB, this.deps.instanceId, at, at + (this.deps.leaseMs ?? 5_000))))
      return 0;
    const open = await store.settlements.listOpen(at - this.deps.settleWaitMs, this.deps.batchSize ?? 50);
    await Promise.all(
      open.map(async (settlement) => {
        try {
          await this.deps.facilitator.finish(settlement, this.deps.waitMs ?? 2_000);
        } catch (error) {
          this.deps.log?.(`could not finish x402 settlement ${settlement.transactionId}`, error);
        }
      }),
    );
    return open.length;
  }
}
