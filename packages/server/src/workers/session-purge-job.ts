import type { Job } from '../scheduling/job.ts';
import { PeriodicWorker } from '../scheduling/periodic-worker.ts';
import type { DashboardAuthService } from '../services/dashboard-auth/dashboard-auth-service.ts';

/**
 * Expired dashboard sessions open nothing (every lookup checks the time), but their rows would pile up:
 * every instance deletes them once at start and then every `auth.sessionPurgeIntervalMs`.
 */
export class SessionPurgeJob implements Job {
  readonly name = 'dashboard-session-purge';
  private readonly worker: PeriodicWorker;

  constructor(
    private readonly auth: DashboardAuthService,
    private readonly log: (message: string, error: unknown) => void,
  ) {
    this.worker = new PeriodicWorker(() => this.runOnce(), {
      intervalMs: auth.sessionPurgeIntervalMs,
      // Storage unavailable: the next pass tries again.
      onError: (error) => log('purging expired dashboard sessions failed', error),
      unref: true,
    });
  }

  start(): void {
    this.runOnce().catch((error: unknown) => this.log('purging expired dashboard sessions failed', error));
    this.worker.start();
  }

  stop(): Promise<void> {
    return this.worker.stop();
  }

  /** One pass: the number of sessions deleted. */
  runOnce(): Promise<number> {
    return this.auth.purgeExpiredSessions();
  }
}
