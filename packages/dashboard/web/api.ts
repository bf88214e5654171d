import type { components, operations } from '../../client/src/generated/openapi-types.ts';

/** The dashboard's own JSON API (/dashboard/api), called with the session cookie and the CSRF token. */
const BASE = '/dashboard/api';

let csrfToken = '';

/** Set after log-in and on every page load (GET /session); sent with every state-changing request. */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

let sessionEnded: () => void = () => {};

/**
 * Called when the gateway answers 401 to a request of a logged-in page: the session is over (logged out
 * elsewhere, a new password, expired), so the app shows the log-in form instead of failing page by page.
 */
export function whenSessionEnds(listener: () => void): void {
  sessionEnded = listener;
}

/** An error answer of the gateway: its code, message and per-field details. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export async function api<T>(
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<T> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  let response: Response;
  try {
    response = await fetch(`${BASE}${path}`, {
      method,
      headers,
      credentials: 'same-origin',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The gateway cannot be reached.');
  }
  const text = await response.text();
  const json = text === '' ? undefined : (JSON.parse(text) as unknown);
  // A 401 from log-in is a wrong password, not the end of a session.
  if (response.status === 401 && path !== '/login') sessionEnded();
  if (!response.ok) {
    const error = (json as { error?: { code?: string; message?: string; details?: Record<string, string> } })
      ?.error;
    throw new ApiError(
      response.status,
      error?.code ?? 'UNKNOWN',
      error?.message ?? `Request failed (${response.status}).`,
      error?.details ?? {},
    );
  }
  return json as T;
}

export interface Session {
  email: string;
  accountId: string;
  csrfToken: string;
  expiresAt: number;
}

export interface Account {
  id: string;
  name: string;
  plan: 'standard' | 'premium' | 'enterprise';
  rateLimit: number;
  windowSeconds: number;
  used: number;
  resetAt: number;
  createdAt: number;
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  createdAt: number;
  lastUsedAt: number | null;
  /** `admin`: the key may read and set spend policies. */
  scopes: string[];
}

/** A spend policy as the gateway answers it (docs/spend-policies.md). */
export interface SpendPolicy {
  scope: 'account' | 'key';
  keyId: string | null;
  limits:
    | {
        network: string;
        asset: string;
        assetAddress: string | null;
        decimals: number;
        maxPerPayment: string | null;
        maxPerDay: string | null;
      }[]
    | null;
  allowedRecipients: string[] | null;
  allowedHosts: string[] | null;
  allowedNetworks: string[] | null;
  expiresAt: string | null;
  updatedAt: number;
}

/**
 * The shapes the dashboard API shares with the public API come from the OpenAPI document the gateway
 * serves, through the SDK's generated types (packages/client/test/openapi-sdk.test.ts keeps those equal to
 * the served document), so a field the server adds or renames reaches the page's type-check.
 * Type-only: nothing of the SDK is bundled into the page.
 */
type Answer<O extends keyof operations> = operations[O] extends {
  responses: { 200: { content: { 'application/json': infer A } } };
}
  ? A
  : never;

/**
 * A custodial wallet as GET /wallets shows it (native and token balances), with its network's name,
 * whether its faucet works and which tokens it mints.
 */
export type Wallet = Answer<'listWallets'>['wallets'][number] & {
  networkName: string | null;
  faucet: boolean;
  faucetTokens: string[];
};

/** One row of the payment history (spec §2.4). */
export type PaymentEntry = Answer<'getPaymentHistory'>['payments'][number];

/** A payment in full (spec §2.1), with a block explorer link where the network has a public explorer. */
export type PaymentDetail = Answer<'getPaymentStatus'> & { explorerUrl: string | null };

/** GET /account/summary: paid volume per day and asset, totals and top resources (the home page). */
export type AccountSummary = Answer<'getAccountSummary'>;

export type Webhook = components['schemas']['Webhook'];
export type Delivery = components['schemas']['WebhookDelivery'];

export interface PaymentEvent {
  id: string;
  type: string;
  createdAt: number;
  amount: number;
  data: Record<string, unknown>;
}
