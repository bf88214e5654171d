export interface PeriodicWorkerOptions {
  /** The wait before the first pass and between the end of one pass and the start of the next. */
  readonly intervalMs: number;
  /** Told of a pass that failed; the next pass runs as usual. */
  readonly onError: (error: unknown) => void;
  /** Lets the process exit while the worker waits (the timer is unref'd); default false. */
  readonly unref?: boolean;
  /** The longest wait after failed passes (see PeriodicWorker); default MAX_BACKOFF_MS. */
  readonly maxBackoffMs?: number;
}

/**
 * The longest a worker waits after failures: short, so that it resumes within seconds of storage or a
 * chain coming back, without anyone restarting it.
 */
export const MAX_BACKOFF_MS = 5_000;

/**
 * Runs a background pass again and again, one at a time: the next pass is scheduled only when the
 * previous one ended, so a slow pass never overlaps itself on this instance. stop() waits for a pass
 * under way, and no pass starts after it. Whatever keeps instances from running the same work at
 * once (a job lease, row leases) is the pass's own business.
 *
 * Back-off: after a failed pass (storage or a chain down) the wait doubles — 2, 4, 8… times the
 * interval, up to `maxBackoffMs` but never below the interval — so an outage is not hammered (nor the
 * log filled) every interval; the first pass that succeeds brings the interval back.
 */
export class PeriodicWorker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  /** Passes that failed in a row. */
  private failures = 0;

  constructor(
    private readonly pass: () => Promise<unknown>,
    private readonly options: PeriodicWorkerOptions,
  ) {}

  start(): void {
    this.schedule();
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** The wait before the next pass: the interval, or the back-off after failures. */
  get nextWaitMs(): number {
    const { intervalMs } = this.options;
    if (this.failures === 0) return intervalMs;
    const ceiling = Math.max(intervalMs, this.options.maxBackoffMs ?? MAX_BACKOFF_MS);
    return Math.min(ceiling, intervalMs * 2 ** Math.min(this.failures, 30));
  }

  private schedule(): void {
    const timer = setTimeout(() => this.tick(), this.nextWaitMs);
    if (this.options.unref === true) timer.unref();
    this.timer = timer;
  }

  private tick(): void {
    // Started inside a promise: a pass that throws before it returns one is a failed pass too.
    const running = Promise.resolve()
      .then(() => this.pass())
      .then(
        () => {
          this.failures = 0;
        },
        (error: unknown) => {
          this.failures += 1;
          this.options.onError(error);
        },
      )
      .finally(() => {
        // Cleared by stop(): nothing more is scheduled.
        if (this.timer !== undefined) this.schedule();
      });
    // A failure that onError itself could not take (a log that throws) must not end the process as an
    // unhandled rejection: the worker goes on, and stop() still rejects with it if it was the last pass.
    running.catch(() => {});
    this.running = running;
  }
}
