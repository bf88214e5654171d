/** The dashboard's own JSON API (/dashboard/api), called with the session cookie and the CSRF token. */
const BASE = '/dashboard/api';

let csrfToken = '';

/** Set after log-in and on every page load (GET /session); sent with every state-changing request. */
export function setCsrfToken(token: string): void {
  csrfToken = token;
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

export async function api<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
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
}

export interface Wallet {
  address: string;
  chain: 'solana' | 'evm';
  network: string | null;
  networkName: string | null;
  watchOnly: boolean;
  createdAt: number;
  balance: number | null;
  currency: string | null;
  faucet: boolean;
}

export interface PaymentEntry {
  paymentId: string;
  type: 'sent' | 'received';
  amount: number;
  recipient?: string;
  sender?: string;
  resource?: string;
  status: string;
  timestamp: number;
  signature: string | null;
  network: string;
  asset?: string;
}

export interface PaymentDetail {
  paymentId: string;
  type: 'sent' | 'received';
  network: string;
  signature: string | null;
  status: string;
  amount: number;
  sender: string;
  recipient: string;
  resource?: string;
  blockHeight: number | null;
  confirmations: number;
  timestamp: number;
  metadata?: Record<string, unknown>;
  asset?: string;
  explorerUrl: string | null;
}

export interface PaymentEvent {
  id: string;
  type: string;
  createdAt: number;
  amount: number;
  data: Record<string, unknown>;
}

export interface Webhook {
  id: string;
  url: string;
  eventTypes: string[];
  createdAt: number;
}

export interface Delivery {
  id: string;
  eventId: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  nextAttemptAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  lastAttemptAt: number | null;
  deliveredAt: number | null;
  createdAt: number;
}
