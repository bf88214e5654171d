/**
 * Background work an instance runs while it serves: each job is started once by the gateway
 * (gateway.ts, the one place jobs are wired) and stopped before storage closes. A job's pass is its
 * own business (leases keep instances from doing the same work twice); stop() waits for a pass under way.
 */
export interface Job {
  /** Stable and unique within a gateway; tests start jobs by name. */
  readonly name: JobName;
  start(): void;
  stop(): Promise<void>;
}

export type JobName =
  | 'payment-reconciler'
  | 'settlement-finisher'
  | 'upto-escrow-sweep'
  | 'webhook-delivery'
  | 'event-retention'
  | 'dashboard-session-purge';

/** A worker with start/stop under its job name. */
export function namedJob(name: JobName, worker: { start(): void; stop(): Promise<void> }): Job {
  return { name, start: () => worker.start(), stop: () => worker.stop() };
}
