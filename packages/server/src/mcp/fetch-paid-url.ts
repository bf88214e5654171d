import { type Gate402Client, PaymentDeclinedError, payingFetch, paymentResponseOf } from '@gate402/client';
import { ToolError, toToolFailure } from './tool-error.ts';

/** What fetch_paid_url is asked. */
export interface FetchPaidUrlInput {
  readonly url: string;
  readonly method?: 'GET' | 'POST' | undefined;
  readonly body?: string | undefined;
  readonly contentType?: string | undefined;
  readonly wallet?: string | undefined;
  readonly maxAmount: string;
}

export interface FetchLimits {
  /** The most body bytes handed back; the rest is cut off (and the answer says so). */
  readonly maxBodyBytes: number;
  /** The whole exchange, the payment and the paid retry included. */
  readonly timeoutMs: number;
}

/** The payment fetch_paid_url made, as the gateway answered it (POST /payment/send). */
export interface PaymentMade {
  readonly paymentId: string;
  readonly status: string;
  readonly amount: number;
  readonly recipient: string;
  readonly signature: string;
  readonly network: string;
  readonly asset: string;
  readonly scheme: string;
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
  const pay = payingFetch({
    gateway,
    wallet,
    maxAmount: input.maxAmount,
    fetch: sellerFetch,
    onPayment: (sent, requirement) => {
      payment = {
        paymentId: sent.paymentId,
        status: sent.status,
        amount: sent.amount,
        recipient: sent.recipient,
        signature: sent.signature,
        network: requirement.network,
        asset: requirement.asset,
        scheme: requirement.scheme,
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
      throw new ToolError('PAYMENT_DECLINED', `Not paid: ${error.message}. Nothing was paid.`);
    }
    throw failedAfter(error, input.url, signal, limits, payment);
  }
  const settlement = paymentResponseOf(response) ?? null;
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
  };
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
