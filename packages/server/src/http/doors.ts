import type { Feature } from '../domain/plan-access.ts';

/**
 * One way into the gateway that the access policy guards: an API route, the payment stream, a dashboard
 * API route. Each is recorded where its guard is attached, so the list is what is enforced, not a copy
 * of it; the door-policy test walks it against the OpenAPI document, the dashboard's route tree and the
 * plan table.
 */
export interface Door {
  readonly way: 'api' | 'stream' | 'dashboard';
  readonly method: string;
  readonly url: string;
  /** The plan feature it belongs to, or what it needs instead: a dashboard session, or nothing. */
  readonly access: Feature | 'session' | 'public';
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every guarded door of the app, in the order they were registered. */
    readonly doors: readonly Door[];
  }
}
