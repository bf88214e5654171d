import type { Gate402Client } from '@gate402/client';
import { type Static, type TSchema, Type } from 'typebox';
import { type FetchLimits, fetchPaidUrl } from './fetch-paid-url.ts';
import { ToolError } from './tool-error.ts';

/** What every tool call acts through: the gateway as the API key's account, and the way out to sellers. */
export interface AgentToolContext {
  /** The gateway, authenticated with the agent's API key: every call passes the API's door (key, rate limit, plan). */
  readonly gateway: Gate402Client;
  /** Reaches sellers' URLs. On the gateway (/mcp) it goes through the SSRF guard. */
  readonly sellerFetch: typeof fetch;
  readonly limits: FetchLimits;
}

export interface AgentTool<S extends TSchema = TSchema> {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: S;
  /** MCP's hints to clients: read-only tools may be called without asking the user. */
  readonly annotations: { readonly readOnlyHint: boolean; readonly openWorldHint: boolean };
  run(args: Static<S>, context: AgentToolContext): Promise<unknown>;
}

function tool<S extends TSchema>(definition: AgentTool<S>): AgentTool {
  return definition as unknown as AgentTool;
}

const ADDRESS = Type.String({ minLength: 1, maxLength: 100 });
/** A decimal amount in whole units, as text: exact, where a JSON number may not be. */
const DECIMAL = Type.String({ pattern: '^\\d{1,12}(\\.\\d{1,18})?$' });

/**
 * Bounds of fetch_paid_url: the body handed to the agent (a model reads it; more is a token bill), the
 * POST body sent, and the whole exchange, payment included, kept under MCP clients' usual 60 s request
 * timeout so the agent hears the outcome rather than its client giving up on it.
 */
export const AGENT_FETCH_LIMITS = {
  maxBodyBytes: 100 * 1024,
  maxRequestBytes: 256 * 1024,
  timeoutMs: 50_000,
};

/** A history page is what an agent reads at once; more than this is a token bill, not an answer. */
export const MAX_LIST_PAYMENTS = 100;
/** Without `wallet`, list_payments asks the history of each wallet: one API request each, so a bounded few. */
const MAX_MERGED_WALLETS = 20;
/** GET /payment/history's own limit: a merged page reads up to offset + limit entries of each wallet. */
const MAX_HISTORY = 500;

/**
 * The tools an agent gets, the same on both transports (`gate402 mcp` over stdio, `/mcp` on the gateway).
 * Each acts only through the gateway's own API (@gate402/client), so a tool can do exactly what the key
 * could do with HTTP requests: another account's payment is PAYMENT_NOT_FOUND here as there, and a plan
 * that leaves out a feature leaves out the tool that uses it.
 */
export const AGENT_TOOLS: readonly AgentTool[] = [
  tool({
    name: 'fetch_paid_url',
    title: 'Fetch a URL, paying its 402',
    description:
      'GET or POST a URL. If it answers 402 Payment Required with an x402 offer the wallet can pay, pays it from the wallet (at most maxAmount, and within the limits the API key is held to) and fetches again with the proof. Answers the HTTP status, the body as text (cut to a size limit; the answer says when), and the payment made (null when none was needed); a 402 left unpaid lists its offers.',
    inputSchema: Type.Object(
      {
        url: Type.String({ format: 'uri', maxLength: 2048, description: 'An http(s) URL.' }),
        method: Type.Optional(
          Type.Union([Type.Literal('GET'), Type.Literal('POST')], { description: 'Default GET.' }),
        ),
        body: Type.Optional(Type.String({ maxLength: 65_536, description: 'The POST body.' })),
        contentType: Type.Optional(
          Type.String({
            maxLength: 200,
            description: "The POST body's media type; default application/json.",
          }),
        ),
        wallet: Type.Optional({
          ...ADDRESS,
          description:
            'The custodial wallet that pays (see get_balances); may be left out when the account has exactly one.',
        }),
        maxAmount: Type.Union(
          [
            DECIMAL,
            Type.Record(Type.String({ minLength: 1, maxLength: 100 }), DECIMAL, {
              minProperties: 1,
              maxProperties: 20,
            }),
          ],
          {
            description:
              'The most this request may cost. A decimal string (\'0.01\') is in the wallet\'s native currency (SOL, ETH) and pays gate402 offers; an object ({"USDC": "0.05"}, keys a token symbol or address) pays standard x402 offers in those tokens. A dearer offer is declined and nothing is paid; an unpaid 402 lists its offers.',
          },
        ),
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: false, openWorldHint: true },
    run: (args, context) => fetchPaidUrl(context.gateway, context.sellerFetch, context.limits, args),
  }),
  tool({
    name: 'get_balances',
    title: 'Wallets and balances',
    description:
      "The account's wallets (custodial, and watch-only addresses) with their chain, network and balance.",
    inputSchema: Type.Object({}, { additionalProperties: false }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: async (_args, { gateway }) => gateway.wallets(),
  }),
  tool({
    name: 'get_spend_limits',
    title: 'Spending limits',
    description:
      'The spending limits that bind this API key, set by the account owner: the per-payment and daily caps per asset, allowed recipients, resource hosts and networks, the expiry, and what each daily cap has left. A payment beyond them is refused (SPEND_LIMIT_EXCEEDED and similar), whatever maxAmount says.',
    inputSchema: Type.Object({}, { additionalProperties: false }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: async (_args, { gateway }) => gateway.spendPolicy(),
  }),
  tool({
    name: 'list_payments',
    title: 'Payment history',
    description:
      "Payments sent and received, newest first: of one wallet, or of all the account's wallets when none is named.",
    inputSchema: Type.Object(
      {
        wallet: Type.Optional({ ...ADDRESS, description: 'One of your wallets; default: every wallet.' }),
        type: Type.Optional(
          Type.Union([Type.Literal('sent'), Type.Literal('received'), Type.Literal('all')], {
            description: 'Default all.',
          }),
        ),
        limit: Type.Optional(
          Type.Integer({ minimum: 1, maximum: MAX_LIST_PAYMENTS, description: 'Default 20.' }),
        ),
        offset: Type.Optional(
          Type.Integer({ minimum: 0, maximum: MAX_HISTORY - MAX_LIST_PAYMENTS, description: 'Default 0.' }),
        ),
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: (args, { gateway }) => listPayments(gateway, args),
  }),
  tool({
    name: 'get_payment',
    title: 'One payment',
    description: "One of the account's payments by its id (pay_…): status, amount, parties, confirmations.",
    inputSchema: Type.Object(
      { paymentId: Type.String({ minLength: 1, maxLength: 100, description: 'pay_…' }) },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: false },
    run: (args, { gateway }) => gateway.paymentStatus(args.paymentId),
  }),
];

interface ListPaymentsInput {
  readonly wallet?: string | undefined;
  readonly type?: 'sent' | 'received' | 'all' | undefined;
  readonly limit?: number | undefined;
  readonly offset?: number | undefined;
}

/**
 * GET /payment/history of one wallet, or of each of the account's wallets merged newest first: each
 * wallet's first offset + limit entries hold the merged page's, so the page is exact.
 */
async function listPayments(gateway: Gate402Client, input: ListPaymentsInput) {
  const limit = input.limit ?? 20;
  const offset = input.offset ?? 0;
  const type = input.type ?? 'all';
  if (input.wallet !== undefined) {
    const page = await gateway.paymentHistory(input.wallet, { type, limit, offset });
    return { wallets: [page.walletAddress], total: page.total, limit, offset, payments: page.payments };
  }
  const { wallets } = await gateway.wallets();
  if (wallets.length > MAX_MERGED_WALLETS) {
    throw new ToolError(
      'INVALID_PARAMETERS',
      `This account has ${wallets.length} wallets; name one in \`wallet\` (get_balances lists them).`,
      { wallet: `required when the account has more than ${MAX_MERGED_WALLETS} wallets` },
    );
  }
  const pages = await Promise.all(
    wallets.map((w) => gateway.paymentHistory(w.address, { type, limit: offset + limit, offset: 0 })),
  );
  const merged = pages
    .flatMap((page) => page.payments.map((payment) => ({ wallet: page.walletAddress, ...payment })))
    .sort((a, b) => b.timestamp - a.timestamp);
  return {
    wallets: wallets.map((w) => w.address),
    total: pages.reduce((sum, page) => sum + page.total, 0),
    limit,
    offset,
    payments: merged.slice(offset, offset + limit),
  };
}
