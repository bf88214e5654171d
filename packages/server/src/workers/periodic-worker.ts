export interface PeriodicWorkerOptions {
  /** The wait before the first pass and between the end of one pass and the start of the next. */
  readonly intervalMs: number;
  /** Told of a pass that failed; the next pass runs as usual. */
  readonly onError: (error: unknown) => void;
  /** Lets the process exit while the worker waits (the timer is unref'd); default false. */
  readonly unref?: boolean;
}

/**
 * Runs a background pass again and again, one at a time: the next pass is scheduled only when the
 * previous one ended, so a slow pass never overlaps itself on this instance. stop() waits for a pass
 * under way, and no pass starts after it. Whatever keeps instances from running the same work at
 * once (a job lease, row leases) is the pass's own business.
 */
export class PeriodicWorker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

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

  private schedule(): void {
    const timer = setTimeout(() => this.tick(), this.options.intervalMs);
    if (this.options.unref === true) timer.unref();
    this.timer = timer;
  }

  private tick(): void {
    this.running = this.pass()
      .catch((error: unknown) => this.options.onError(error))
      .finally(() => {
        // Cleared by stop(): nothing more is scheduled.
        if (this.timer !== undefined) this.schedule();
      });
  }
}
