import type { NetworkRegistry } from '../chains/network-registry.ts';
import type { SweptEscrow } from '../chains/upto-scheme.ts';
import { PeriodicWorker } from '../scheduling/periodic-worker.ts';
import type { FacilitatorService } from '../services/facilitator/facilitator-service.ts';
import { releaseChannelRent, releaseOpenChannel } from '../services/facilitator/upto-open-channels.ts';
import type { Store } from '../store/store.ts';

export interface UptoEscrowSweepDeps {
  readonly store: Store;
  readonly networks: Pick<NetworkRegistry, 'all'>;
  readonly facilitator: Pick<FacilitatorService, 'uptoSchemeFor'>;
  /** Names this process in the job lease. */
  readonly instanceId: string;
  /** How often a pass runs (on the instance holding the lease); default 60 s. */
  readonly intervalMs?: number;
  /** How long one pass holds the job; default 55 s. */
  readonly leaseMs?: number;
  readonly log?: (message: string, error?: unknown) => void;
  readonly now?: () => number;
}

/** The job lease's name: one instance at a time sweeps (two would send the same close twice). */
const JOB = 'x402-upto-escrow-sweep';

/**
 * Gives back what x402 `upto` escrows hold when nobody will claim them: a seller whose handler never
 * asked to settle after the deposit (it crashed, or was not a stock seller) leaves the buyer's maximum
 * in escrow and the facilitator's rent in the channel. Each pass, on the one instance holding the
 * job's lease, every network's escrowing `upto` scheme (UptoEscrow.sweep: Solana's payment channels)
 * closes its channels that can no longer be claimed — the whole deposit back to the buyer, giving the
 * account its place among its open deposits (X402_UPTO_MAX_OPEN_CHANNELS) and the rent that came back
 * off its X402_UPTO_MAX_CHANNEL_RENT — and takes back the rent of closed ones (off the budget too; a
 * pass that dies between a transaction and that leaves them taken: the safe side). The chain is the
 * record: a pass that dies half-way is redone by the next, and a channel already closed is skipped.
 */
export class UptoEscrowSweep {
  private readonly now: () => number;
  private readonly worker: PeriodicWorker;

  constructor(private readonly deps: UptoEscrowSweepDeps) {
    this.now = deps.now ?? Date.now;
    this.worker = new PeriodicWorker(() => this.runOnce(), {
      intervalMs: deps.intervalMs ?? 60_000,
      onError: (error) => deps.log?.('upto escrow sweep pass failed', error),
    });
  }

  start(): void {
    this.worker.start();
  }

  stop(): Promise<void> {
    return this.worker.stop();
  }

  /** One pass; what it closed or reclaimed (nothing when another instance holds the job). */
  async runOnce(): Promise<SweptEscrow[]> {
    const { store } = this.deps;
    const at = this.now();
    if (!(await store.jobLeases.claim(JOB, this.deps.instanceId, at, at + (this.deps.leaseMs ?? 55_000))))
      return [];
    const swept: SweptEscrow[] = [];
    for (const chain of this.deps.networks.all()) {
      const escrow = this.deps.facilitator.uptoSchemeFor(chain.info.id)?.escrow;
      if (escrow === undefined) continue;
      try {
        const done = await escrow.sweep((key) => store.settlements.get(key), at);
        swept.push(...done);
        // What came back to the fee payer is off the account's budgets: a refund frees its deposit's place
        // and the escrow token account's rent (and the channel account's when the refund closed it too,
        // coming past the reclaim window), a reclaim the channel account's rent.
        const rent = done.length === 0 ? undefined : await escrow.rent();
        for (const { action, deposit } of done) {
          const record = await store.settlements.get(deposit);
          if (record?.status !== 'settled' || rent === undefined) continue;
          if (action === 'reclaimed') {
            await releaseChannelRent(store.sponsoredFees, record, rent.account, this.now());
            continue;
          }
          const held = await escrow.holdsAccount(deposit).catch(() => true);
          await releaseOpenChannel(store.sponsoredFees, record, this.now());
          await releaseChannelRent(
            store.sponsoredFees,
            record,
            rent.escrow + (held ? 0n : rent.account),
            this.now(),
          );
        }
      } catch (error) {
        this.deps.log?.(`could not sweep the upto escrows on ${chain.info.name}`, error);
      }
    }
    return swept;
  }
}
