import { type Gate402Client, PaymentDeclinedError, payingFetch, paymentResponseOf } from '@gate402/client';
import { ToolError, toToolFailure } from './tool-error.ts';

/** The gateway's spend-policy refusals, which fetch_paid_url passes on under their own code. */
const SPEND_POLICY_CODES: ReadonlySet<string> = new Set([
  'SPEND_LIMIT_EXCEEDED',
  'SPEND_NOT_ALLOWED',
  'SPEND_POLICY_EXPIRED',
]);

/** What fetch_paid_url is asked. */
export interface FetchPaidUrlInput {
  readonly url: string;
  readonly method?: 'GET' | 'POST' | undefined;
  readonly body?: string | undefined;
  readonly contentType?: string | undefined;
  readonly wallet?: string | undefined;
  /** The wallet's native currency as a decimal string, or tokens: `{USDC: '0.05'}` (a symbol or token address). */
  readonly maxAmount: string | Readonly<Record<string, string>>;
}

export interface FetchLimits {
  /** The most body bytes handed back; the rest is cut off (and the answer says so). */
  readonly maxBodyBytes: number;
  /** The whole exchange, the payment and the paid retry included. */
  readonly timeoutMs: number;
}

/**
 * The payment fetch_paid_url made, as the gateway answered it: POST /payment/send for a gate402 offer
 * (in the native currency, `confirmed` once sent), POST /payment/x402 for a standard x402 `exact` offer
 * (a token; `pending` until the chain shows the seller settled it: get_payment follows it).
 */
export interface PaymentMade {
  readonly paymentId: string;
  readonly status: string;
  /** In whole units of `asset`. */
  readonly amount: number;
  /** The symbol (SOL, ETH, USDC), or the token's address when it has none. */
  readonly asset: string;
  readonly network: string;
  readonly recipient: string;
  readonly scheme: string;
  /** The transaction, when the gateway sent it (gate402 offers); a seller settles an x402 one. */
  readonly signature?: string;
}

/** One option of a 402 the tool did not pay, so the agent can decide what to allow next time. */
export interface Offer {
  readonly scheme: string;
  readonly network: string;
  readonly asset: string;
  /** Atomic units, as x402 writes them. */
  readonly amount: string;
  readonly payTo: string;
}

export interface FetchPaidUrlResult {
  readonly url: string;
  readonly status: number;
  readonly contentType: string | null;
  /** The body as text (UTF-8), at most `maxBodyBytes` of it; empty for a body that is not text. */
  readonly body: string;
  readonly bodyBytes: number;
  /** True when the body was longer than the limit, or was not text and was left out. */
  readonly truncated: boolean;
  readonly note?: string;
  /** The payment made for this request, or null when none was needed (or the seller's 402 named none we pay). */
  readonly payment: PaymentMade | null;
  /** The seller's settlement answer (PAYMENT-RESPONSE), when it sent one. */
  readonly settlement: Record<string, unknown> | null;
  /** When the answer is a 402 left unpaid: what it offers (nothing within maxAmount was payable). */
  readonly offers?: readonly Offer[];
}

/**
 * GET or POST `input.url` as the API key's account: a 402 is paid from `wallet` by @gate402/client's
 * payingFetch, within `maxAmount` and within whatever the gateway's own checks (and the key's policies)
 * allow, and the request is repeated with the proof. `sellerFetch` reaches the seller: on the gateway it
 * goes through the SSRF guard, so an agent cannot point the gateway at its own network.
 */
export async function fetchPaidUrl(
  gateway: Gate402Client,
  sellerFetch: typeof fetch,
  limits: FetchLimits,
  input: FetchPaidUrlInput,
): Promise<FetchPaidUrlResult> {
  const wallet = input.wallet ?? (await onlyCustodialWallet(gateway));
  let payment: PaymentMade | null = null;
  // A decimal string limits the native currency (gate402 offers); an object limits tokens (x402 `exact`
  // offers, paid through POST /payment/x402), and then no native payment is allowed.
  const tokens = typeof input.maxAmount === 'string' ? undefined : input.maxAmount;
  const pay = payingFetch({
    gateway,
    wallet,
    maxAmount: typeof input.maxAmount === 'string' ? input.maxAmount : '0',
    ...(tokens === undefined ? {} : { maxTokenAmounts: tokens }),
    fetch: sellerFetch,
    onPayment: (sent, requirement) => {
      payment = {
        paymentId: sent.paymentId,
        status: sent.status,
        amount: sent.amount,
        asset: sent.asset?.symbol ?? sent.asset?.address ?? requirement.asset,
        network: requirement.network,
        recipient: sent.recipient,
        scheme: requirement.scheme,
        signature: sent.signature,
      };
    },
    onTokenPayment: (paid) => {
      payment = {
        paymentId: paid.paymentId,
        status: paid.status,
        amount: paid.amount,
        asset: paid.asset.symbol ?? paid.asset.address ?? 'unknown',
        network: paid.network,
        recipient: paid.recipient,
        scheme: 'exact',
      };
    },
  });
  const method = input.method ?? 'GET';
  if (method === 'GET' && input.body !== undefined) {
    throw new ToolError('INVALID_PARAMETERS', 'A GET request has no body; use method POST.', {
      body: 'only with method POST',
    });
  }
  const signal = AbortSignal.timeout(limits.timeoutMs);
  let response: Response;
  try {
    response = await pay(input.url, {
      method,
      signal,
      ...(input.body === undefined
        ? {}
        : { body: input.body, headers: { 'content-type': input.contentType ?? 'application/json' } }),
    });
  } catch (error) {
    if (error instanceof PaymentDeclinedError) {
      // The gateway's own refusal (a spend policy's SPEND_LIMIT_EXCEEDED with what remains) is passed on
      // as it is, so an agent can tell a cap from a price it declined.
      throw new ToolError(
        error.code !== undefined && SPEND_POLICY_CODES.has(error.code) ? error.code : 'PAYMENT_DECLINED',
        `Not paid: ${error.message}. Nothing was paid.`,
        error.details,
      );
    }
    throw failedAfter(error, input.url, signal, limits, payment);
  }
  const settlement = paymentResponseOf(response) ?? null;
  const offers = response.status === 402 && payment === null ? offersOf(response) : undefined;
  let read: Awaited<ReturnType<typeof readBounded>>;
  try {
    read = await readBounded(response, limits.maxBodyBytes);
  } catch (error) {
    throw failedAfter(error, input.url, signal, limits, payment);
  }
  return {
    url: input.url,
    status: response.status,
    contentType: response.headers.get('content-type'),
    ...read,
    payment,
    settlement: settlement as Record<string, unknown> | null,
    ...(offers === undefined ? {} : { offers }),
  };
}

/** The options of an x402 v2 challenge (PAYMENT-REQUIRED), for an agent deciding what to allow. */
function offersOf(response: Response): Offer[] | undefined {
  const header = response.headers.get('payment-required');
  if (header === null) return undefined;
  try {
    const challenge = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { accepts?: unknown };
    if (!Array.isArray(challenge.accepts)) return undefined;
    return challenge.accepts.slice(0, 10).map((option: Record<string, unknown>) => ({
      scheme: String(option.scheme).slice(0, 50),
      network: String(option.network).slice(0, 100),
      asset: String(option.asset).slice(0, 100),
      amount: String(option.amount ?? option.maxAmountRequired).slice(0, 80),
      payTo: String(option.payTo).slice(0, 100),
    }));
  } catch {
    return undefined;
  }
}

/**
 * The error to report for a failure once the request was under way: a timeout as such, and, when a
 * payment was made before it, the payment with it, so the agent knows money moved.
 */
function failedAfter(
  error: unknown,
  url: string,
  signal: AbortSignal,
  limits: FetchLimits,
  payment: PaymentMade | null,
): unknown {
  if (signal.aborted) {
    return new ToolError(
      'TIMEOUT',
      `${url} did not answer within ${limits.timeoutMs / 1000} s${payment === null ? '' : ', after the payment was made'}.`,
      undefined,
      payment,
    );
  }
  if (payment === null) return error;
  const failure = toToolFailure(error);
  return new ToolError(
    failure.code,
    `${failure.message} The payment was made; the seller did not answer with the resource.`,
    failure.details,
    payment,
  );
}

/** The account's one custodial wallet; with none or several, the caller must say which pays. */
async function onlyCustodialWallet(gateway: Gate402Client): Promise<string> {
  const { wallets } = await gateway.wallets();
  const custodial = wallets.filter((w) => !w.watchOnly);
  const [only] = custodial;
  if (only !== undefined && custodial.length === 1) return only.address;
  throw new ToolError(
    'INVALID_PARAMETERS',
    custodial.length === 0
      ? 'This account has no custodial wallet to pay from; create one first.'
      : `This account has ${custodial.length} custodial wallets; name the one that pays in \`wallet\` (get_balances lists them).`,
    { wallet: 'required when the account has no or several custodial wallets' },
  );
}

/** Media types read as text besides text/*. */
const TEXT_TYPES =
  /^(application\/([\w.+-]*\+)?(json|xml|javascript|x-www-form-urlencoded|graphql|yaml|x-ndjson))\b/i;

/**
 * At most `limit` bytes of the body, as text: a longer body is cut (the reader is cancelled, so the
 * rest is never downloaded), and a body that is not text is not handed to the agent at all.
 */
async function readBounded(
  response: Response,
  limit: number,
): Promise<Pick<FetchPaidUrlResult, 'body' | 'bodyBytes' | 'truncated' | 'note'>> {
  const type = response.headers.get('content-type') ?? '';
  const isText = type === '' || type.toLowerCase().startsWith('text/') || TEXT_TYPES.test(type);
  if (!isText) {
    await response.body?.cancel().catch(() => {});
    return {
      body: '',
      bodyBytes: 0,
      truncated: true,
      note: `The body (${type}) is not text and was left out.`,
    };
  }
  const reader = response.body?.getReader();
  if (reader === undefined) return { body: '', bodyBytes: 0, truncated: false };
  const chunks: Uint8Array[] = [];
  let length = 0;
  let truncated = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = limit - length;
      if (value.byteLength > room) {
        chunks.push(value.subarray(0, room));
        length += room;
        truncated = true;
        break;
      }
      chunks.push(value);
      length += value.byteLength;
    }
  } finally {
    if (truncated) reader.cancel().catch(() => {});
  }
  // A cut may fall inside a multi-byte character: the decoder replaces the broken tail.
  const body = new TextDecoder().decode(Buffer.concat(chunks));
  return {
    body,
    bodyBytes: length,
    truncated,
    ...(truncated
      ? { note: `The body is longer than ${limit} bytes; only the first ${limit} are shown.` }
      : {}),
  };
}
