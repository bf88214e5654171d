import type { ConfirmationOutcome } from '../chain-adapter.ts';

/** getSignatureStatuses takes at most this many signatures per call. */
const BATCH = 256;

interface Watch {
  readonly lastValidBlockHeight: bigint;
  readonly waiters: Set<(outcome: ConfirmationOutcome) => void>;
}

export interface SignatureWatcherSource {
  /** Statuses of these signatures, in order; undefined where the chain does not know one. */
  statuses(signatures: readonly string[]): Promise<(ConfirmationOutcome | undefined)[]>;
  blockHeight(): Promise<bigint>;
  /** Whether every RPC endpoint is down now, so a failed check says nothing will be learnt for a while. */
  unreachable?(): boolean;
}

/**
 * Waits for many signatures with one request per check: however many payments are in flight,
 * each check is one getSignatureStatuses per 256 signatures and one getBlockHeight, rather than a
 * subscription and a poll per payment (which at a few hundred sends a second swamps an RPC endpoint).
 * Checks run when `nudge()` is called (a new slot, from a slot subscription) and on a timer as a
 * fallback. A signature the chain still does not know once the height passes its
 * lastValidBlockHeight is looked up once more and then reported expired. A check that fails while
 * every endpoint is down ends every wait at once, `pending` (not known): waiting out each caller's
 * timeout would learn nothing more, and the caller answers as it does for a slow chain.
 */
export class SignatureWatcher {
  private readonly watches = new Map<string, Watch>();
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly source: SignatureWatcherSource,
    private readonly intervalMs: number,
  ) {}

  /** Resolves with the outcome, or undefined when `signal` aborts first. */
  wait(
    signature: string,
    lastValidBlockHeight: bigint,
    signal: AbortSignal,
  ): Promise<ConfirmationOutcome | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const watch = this.watches.get(signature) ?? { lastValidBlockHeight, waiters: new Set() };
      this.watches.set(signature, watch);
      const done = (outcome: ConfirmationOutcome | undefined) => {
        watch.waiters.delete(done);
        if (watch.waiters.size === 0 && this.watches.get(signature) === watch) this.watches.delete(signature);
        signal.removeEventListener('abort', onAbort);
        resolve(outcome);
      };
      const onAbort = () => done(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      watch.waiters.add(done);
      this.schedule();
      this.nudge();
    });
  }

  /** Whether any signature is being waited for. */
  get busy(): boolean {
    return this.watches.size > 0;
  }

  /** Checks now (coalesced with a check already running). */
  nudge(): void {
    if (this.watches.size === 0) return;
    if (this.checking !== undefined) {
      this.again = true;
      return;
    }
    this.checking = this.check()
      .catch(() => {
        if (this.source.unreachable?.() === true) this.settleAll({ status: 'pending' });
      })
      .finally(() => {
        this.checking = undefined;
        if (this.again) {
          this.again = false;
          this.nudge();
        }
      });
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => {
      if (this.watches.size === 0) this.close();
      else this.nudge();
    }, this.intervalMs);
    this.timer.unref();
  }

  private async check(): Promise<void> {
    const signatures = [...this.watches.keys()];
    const unknown: string[] = [];
    for (let i = 0; i < signatures.length; i += BATCH) {
      const batch = signatures.slice(i, i + BATCH);
      const statuses = await this.source.statuses(batch);
      for (const [j, signature] of batch.entries()) {
        const outcome = statuses[j];
        if (outcome === undefined) unknown.push(signature);
        else this.settle(signature, outcome);
      }
    }
    if (unknown.length === 0) return;
    const height = await this.source.blockHeight();
    const expired = unknown.filter((s) => {
      const watch = this.watches.get(s);
      return watch !== undefined && height > watch.lastValidBlockHeight;
    });
    if (expired.length === 0) return;
    // It may have landed just before its blockhash expired: look once more before saying expired.
    const last = await this.source.statuses(expired);
    for (const [j, signature] of expired.entries()) this.settle(signature, last[j] ?? { status: 'expired' });
  }

  private settleAll(outcome: ConfirmationOutcome): void {
    for (const signature of [...this.watches.keys()]) this.settle(signature, outcome);
  }

  private settle(signature: string, outcome: ConfirmationOutcome): void {
    const watch = this.watches.get(signature);
    if (watch === undefined) return;
    this.watches.delete(signature);
    for (const waiter of [...watch.waiters]) waiter(outcome);
  }
}
