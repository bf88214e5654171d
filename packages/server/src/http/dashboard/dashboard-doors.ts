import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Feature } from '../../domain/plan-access.ts';
import type { AccessPolicy } from '../../services/accounts/access-policy.ts';
import type { Door } from '../doors.ts';
import { sendError } from '../plugins/errors.ts';

/**
 * What a route of the dashboard API needs, besides what its session guard checks:
 * - `public`: nothing (the page's settings, sign-up, log-in);
 * - `session`: a logged-in session only — the session itself, log-out, the password, and the account's
 *   API keys, which every account manages in the dashboard whatever its plan (spec §2.6, §5);
 * - a feature: the session's account's plan must grant it, as the API's route of the same feature
 *   demands of a key (the access policy, services/accounts/access-policy.ts).
 */
export type DashboardDoor = 'public' | 'session' | { readonly feature: Feature };

/**
 * Every dashboard API route, by method and path under /dashboard/api. A route that is neither here nor
 * in a section below stops the app from starting, so a new route cannot skip the plan table.
 */
export const DASHBOARD_DOORS: Readonly<Record<string, DashboardDoor>> = {
  'GET /config': 'public',
  'POST /signup': 'public',
  'POST /login': 'public',
  'POST /logout': 'session',
  'POST /password': 'session',
  'GET /session': 'session',
  'GET /keys': 'session',
  'POST /keys': 'session',
  'DELETE /keys/:keyId': 'session',
  // Spend policies: the account owner's session may read and set them, as an admin-scoped key may.
  'GET /spend-policies': { feature: 'account' },
  'PUT /spend-policies/account': { feature: 'account' },
  'DELETE /spend-policies/account': { feature: 'account' },
  'PUT /spend-policies/keys/:keyId': { feature: 'account' },
  'DELETE /spend-policies/keys/:keyId': { feature: 'account' },
  'GET /account': { feature: 'account' },
  'GET /account/summary': { feature: 'account' },
  'GET /wallets': { feature: 'wallets' },
  'POST /wallets': { feature: 'wallets' },
  'POST /wallets/challenge': { feature: 'wallets' },
  'POST /wallets/:address/faucet': { feature: 'faucet' },
  'GET /payments': { feature: 'history' },
  'GET /payments/:paymentId': { feature: 'status' },
  'GET /payments/export': { feature: 'history' },
  // A refund is a payment leaving a wallet: the feature of POST /payment/refund.
  'POST /payments/:paymentId/refund': { feature: 'payments' },
  // The live list is the payment stream's events: the same feature as the WebSocket stream.
  'GET /payments/live': { feature: 'stream' },
};

/** Sections whose every route not listed above belongs to one feature (webhooks, and wallets' own). */
const DASHBOARD_SECTIONS: Readonly<Record<string, Feature>> = {
  '/webhooks': 'webhooks',
  '/wallets': 'wallets',
};

/** The door of a dashboard API route (path without the /dashboard/api prefix); undefined: not known. */
export function dashboardDoorOf(method: string, path: string): DashboardDoor | undefined {
  const listed = DASHBOARD_DOORS[`${method === 'HEAD' ? 'GET' : method} ${path}`];
  if (listed !== undefined) return listed;
  const section = `/${path.split('/')[1] ?? ''}`;
  const feature = DASHBOARD_SECTIONS[section];
  return feature === undefined ? undefined : { feature };
}

/**
 * Gives each route of the dashboard API registered after this call its door: public routes are marked
 * so for the session guard, and a feature route gets a hook — after the guard's, so a session is there —
 * that asks the access policy for the session's account. Dashboard requests are not counted against the
 * API's rate limit (the dashboard is not API use), so the policy checks the plan here, not the count.
 */
export function installDashboardDoors(
  scope: FastifyInstance,
  prefix: string,
  policy: AccessPolicy,
  doors: Door[],
): void {
  scope.addHook('onRoute', (route: RouteOptions) => {
    const path = route.url.startsWith(prefix) ? route.url.slice(prefix.length) : route.url;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const found = methods.map((method) => dashboardDoorOf(method, path));
    const door = found[0];
    if (
      door === undefined ||
      found.some((d) => d === undefined || JSON.stringify(d) !== JSON.stringify(door))
    ) {
      throw new Error(
        `dashboard route ${methods.join(',')} ${path} has no door in dashboard-doors.ts: say whether it is public, needs a session, or which plan feature it belongs to`,
      );
    }
    route.config = { ...route.config, dashboardPublic: door === 'public' };
    for (const method of methods) {
      doors.push({
        way: 'dashboard',
        method,
        url: route.url,
        access: typeof door === 'string' ? door : door.feature,
      });
    }
    if (typeof door === 'string') return;
    const onRequest = route.onRequest;
    route.onRequest = [
      ...(onRequest === undefined ? [] : Array.isArray(onRequest) ? onRequest : [onRequest]),
      planHook(policy, door.feature),
    ];
  });
}

function planHook(policy: AccessPolicy, feature: Feature) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const accountId = request.dashboardSession?.user.accountId;
    const access = await policy.decide({ kind: 'account', accountId }, feature, { count: false });
    if (!access.ok) return sendError(reply, request, access.error);
  };
}
