import { randomUUID } from 'node:crypto';
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements, ResourceInfo, SettleResponse } from '@x402/core/types';
import { fromAtomicUnits, toAtomicUnits, toJsonNumber } from './decimal-amount.ts';
import type { Gate402Client, ResponseOf } from './gate402-client.ts';
import { Gate402TransportError, isGate402Error } from './gate402-error.ts';
import { addressFamily, NetworkCatalog } from './network-catalog.ts';
import { GATE402_NATIVE_SCHEME, NATIVE_ASSET } from './x402/gate402-native.ts';
import {
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  X_PAYMENT_HEADER,
  X_PAYMENT_RESPONSE_HEADER,
} from './x402/headers.ts';
import { decodeHeaderJson, encodeHeaderJson } from './x402/wire.ts';

export interface PayingFetchOptions {
  /** The buyer's gateway. */
  readonly gateway: Gate402Client;
  /** The custodial wallet (on that gateway) that pays. */
  readonly wallet: string;
  /** The most one request may cost, in the wallet's native currency (`'0.05'`); a dearer 402 is declined. */
  readonly maxAmount: string | number;
  /** CAIP-2 id to pay on; default whichever offered network of the wallet's family the gateway serves. */
  readonly network?: string;
  /** Called after each payment, before the request is retried with its proof. */
  readonly onPayment?: (payment: ResponseOf<'sendPayment'>, requirement: PaymentRequirements) => void;
  /**
   * Pay standard x402 `exact` offers (USDC and other tokens GET /networks lists) from `wallet` too, up
   * to these amounts per token, in whole units (`{ USDC: '0.05' }`; a key is a symbol or a token
   * address): the gateway signs the payment (POST /payment/x402) and the request is repeated with it.
   * Without it only `gate402-native` offers are paid, as before.
   */
  readonly maxTokenAmounts?: Readonly<Record<string, string | number>>;
  /** CAIP-2 ids token payments may be made on; default any network of the wallet's family the gateway serves. */
  readonly tokenNetworks?: readonly string[];
  /** Called after each token payment (POST /payment/x402's answer), before the request is repeated with it. */
  readonly onTokenPayment?: (payment: ResponseOf<'payX402'>) => void;
  /** The fetch to wrap; default the global one. */
  readonly fetch?: typeof fetch;
}

/**
 * A 402 offered a payment that the buyer's settings or the gateway do not allow; nothing was paid. When
 * the gateway refused it (a spend policy, no payable option), `code` and `details` are the gateway's
 * (e.g. SPEND_LIMIT_EXCEEDED with the limit and what remains); undefined when this client declined.
 */
export class PaymentDeclinedError extends Error {
  override readonly name = 'PaymentDeclinedError';
  constructor(
    message: string,
    readonly requirement: PaymentRequirements,
    readonly code?: string,
    readonly details?: Readonly<Record<string, string>>,
  ) {
    super(message);
  }
}

/** A 402 challenge, whichever version carried it, with the version the buyer should answer in. */
interface Challenge {
  readonly version: 1 | 2;
  readonly resource: ResourceInfo;
  readonly accepts: readonly PaymentRequirements[];
  /** What the seller sent, for POST /payment/x402: the PAYMENT-REQUIRED value (v2) or the parsed body (v1). */
  readonly sent: { readonly header: string } | { readonly body: unknown };
}

/**
 * `fetch` that pays gate402-protected resources: on a 402 offering a `gate402-native` payment it pays
 * with POST /payment/send from `wallet` and repeats the request once with the proof (PAYMENT-SIGNATURE
 * for a v2 challenge, X-PAYMENT for v1). Any other answer, and a 402 with no gate402 option, is returned
 * as it is. A price above `maxAmount` throws {@link PaymentDeclinedError} before anything is paid.
 * With `maxTokenAmounts`, a 402 offering standard x402 `exact` payments (USDC…) with no payable
 * gate402 option is paid through POST /payment/x402 (the gateway signs for the custodial wallet) and
 * repeated once with the header it returns.
 * A payment whose proof the seller did not take (no answer, or a 5xx) is presented again by the next
 * request for the same offer rather than paid again.
 *
 * @example
 * const pay = payingFetch({ gateway, wallet: buyerWallet, maxAmount: '0.05' });
 * const response = await pay('http://localhost:3000/report');
 * console.log(response.status, paymentResponseOf(response)?.transaction);
 */
export function payingFetch(options: PayingFetchOptions): typeof fetch {
  const base = options.fetch ?? globalThis.fetch;
  const networks = new NetworkCatalog(options.gateway);
  const family = addressFamily(options.wallet);
  /**
   * Payments the seller has not taken yet, by offer: the send's answer was lost (only its key is known),
   * or its proof went unanswered or was answered 5xx (the seller could not check it; spec'd as "present
   * it again"). The next request for the same offer uses them instead of paying again.
   */
  const undelivered = new Map<string, UndeliveredPayment>();

  return async (input, init) => {
    // The paid retry goes to the request that was answered 402, after any redirects: an http → https
    // redirect, say, is another origin, which the proof would not be taken to.
    const { answer: response, last: retry } = await fetchFollowing(base, new Request(input, init));
    if (response.status !== 402) return response;
    const offer = await readChallenge(response.clone());
    if (offer === undefined) return response;
    // A 402 asks payment for its own resources only. The proof is made for the resource the 402 names,
    // and the gateway's spend policies (allowedHosts) judge that name: a seller naming another host's
    // resource would be paid as that host. (POST /payment/x402 checks the same for `exact` offers.)
    const asked = hostOf(retry.url);
    const named = hostOf(offer.resource.url);
    const elsewhere = named === undefined || named !== asked;

    let tooDear: { message: string; requirement: PaymentRequirements } | undefined;
    let malformed: typeof tooDear;
    let misplaced: typeof tooDear;
    for (const requirement of offer.accepts) {
      if (requirement.scheme !== GATE402_NATIVE_SCHEME || requirement.asset !== NATIVE_ASSET) continue;
      if (options.network !== undefined && requirement.network !== options.network) continue;
      if (elsewhere) {
        misplaced ??= {
          message: `the 402 of ${retry.url.slice(0, 200)} asks payment for ${offer.resource.url.slice(0, 200)}, a resource on another host`,
          requirement,
        };
        continue;
      }
      const network = await networks.resolve(options.wallet, requirement.network);
      if (network === undefined || network.family !== family) continue;
      if (!ATOMIC_AMOUNT.test(requirement.amount)) {
        // "1e7", "-5", "0.01": no price to pay, and none to guess.
        malformed ??= {
          message: `${offer.resource.url} asks an amount of ${JSON.stringify(requirement.amount).slice(0, 100)}, which is no whole number of atomic units`,
          requirement,
        };
        continue;
      }

      const decimals = network.nativeCurrency.decimals;
      const atomic = BigInt(requirement.amount);
      // Rounded down: a computed maxAmount (0.1 + 0.2, budget / 3) has more digits than the currency.
      if (atomic > toAtomicUnits(options.maxAmount, decimals, 'down')) {
        // Another option the seller lists may be within the limit; declined only if none is.
        tooDear ??= {
          message: `${offer.resource.url} asks ${fromAtomicUnits(atomic, decimals)} ${network.nativeCurrency.symbol}, more than maxAmount ${options.maxAmount}`,
          requirement,
        };
        continue;
      }
      const offerKey = JSON.stringify([
        offer.resource.url,
        requirement.scheme,
        requirement.network,
        requirement.asset,
        atomic.toString(),
        requirement.payTo,
      ]);
      // Taken out while this request uses it, so two requests never present one proof; put back on failure.
      const kept = undelivered.get(offerKey);
      undelivered.delete(offerKey);
      const present = async (sent: ResponseOf<'sendPayment'>): Promise<Response> => {
        let answer: Response;
        try {
          const paid = new Request(retry.clone(), {
            headers: proofHeaders(retry.headers, offer, requirement, sent),
          });
          answer = (await fetchFollowing(base, paid)).answer;
        } catch (error) {
          undelivered.set(offerKey, { sent });
          throw error;
        }
        if (answer.status >= 500) undelivered.set(offerKey, { sent });
        return answer;
      };
      if (kept?.sent !== undefined) {
        const answer = await present(kept.sent);
        // A 402 refused the kept proof (used meanwhile, or expired): this request pays anew, once.
        if (answer.status !== 402) return answer;
        await answer.body?.cancel();
      }

      // One key per payment, kept while its answer is unknown: asking again with it never pays twice.
      const idempotencyKey =
        (kept?.sent === undefined ? kept?.idempotencyKey : undefined) ?? `gate402-fetch-${randomUUID()}`;
      let sent: ResponseOf<'sendPayment'>;
      try {
        sent = await options.gateway.sendPayment(
          {
            walletAddress: options.wallet,
            recipientAddress: requirement.payTo,
            amount: toJsonNumber(fromAtomicUnits(atomic, decimals)),
            resource: offer.resource.url,
            network: network.id,
          },
          { idempotencyKey },
        );
      } catch (error) {
        // No answer, or the same key still running: the send may have paid; the next request asks again
        // with this key and is answered that payment instead of making another.
        if (error instanceof Gate402TransportError || isGate402Error(error, 'IDEMPOTENCY_KEY_IN_USE')) {
          undelivered.set(offerKey, { idempotencyKey });
        }
        throw error;
      }
      try {
        options.onPayment?.(sent, requirement);
      } catch (error) {
        // Paid all the same: the next request for this offer presents the proof rather than paying again.
        undelivered.set(offerKey, { sent });
        throw error;
      }
      return present(sent);
    }
    if (options.maxTokenAmounts !== undefined && offer.accepts.some((r) => r.scheme === EXACT_SCHEME)) {
      // Not awaited: the clone read above holds the other half of the body (see boundedJson).
      response.body?.cancel().catch(() => {});
      return payWithToken(base, options, offer, retry);
    }
    const declined = tooDear ?? malformed ?? misplaced;
    if (declined !== undefined) throw new PaymentDeclinedError(declined.message, declined.requirement);
    return response;
  };
}

const EXACT_SCHEME = 'exact';

/** The gateway's refusals that mean "not within the buyer's limits": nothing was signed or recorded. */
const DECLINED_CODES = [
  'PAYMENT_OPTION_REFUSED',
  'SPEND_LIMIT_EXCEEDED',
  'SPEND_NOT_ALLOWED',
  'SPEND_POLICY_EXPIRED',
] as const;

/**
 * A standard x402 `exact` offer, paid through POST /payment/x402: the gateway picks the option the wallet
 * may pay within `maxTokenAmounts` (and the key's spend policy), signs it with the custodial key, and the
 * request is repeated once with the header it returns. A refusal throws {@link PaymentDeclinedError}
 * naming each option's reason; nothing was paid. One Idempotency-Key per 402: the SDK's retry of a lost
 * answer gets the same payment, never a second one.
 */
async function payWithToken(
  base: typeof fetch,
  options: PayingFetchOptions,
  offer: Challenge,
  retry: Request,
): Promise<Response> {
  const maxAmount = Object.fromEntries(
    Object.entries(options.maxTokenAmounts ?? {}).map(([asset, amount]) => [
      asset,
      toJsonNumber(String(amount)),
    ]),
  );
  let paid: ResponseOf<'payX402'>;
  try {
    paid = await options.gateway.payX402(
      {
        walletAddress: options.wallet,
        ...('header' in offer.sent
          ? { paymentRequired: offer.sent.header }
          : { paymentRequiredBody: offer.sent.body as Record<string, never> }),
        resource: retry.url,
        maxAmount,
        ...(options.tokenNetworks === undefined ? {} : { networks: [...options.tokenNetworks] }),
      },
      { idempotencyKey: `gate402-fetch-${randomUUID()}` },
    );
  } catch (error) {
    if (isGate402Error(error) && (DECLINED_CODES as readonly string[]).includes(error.code)) {
      const first = offer.accepts.find((r) => r.scheme === EXACT_SCHEME) ?? offer.accepts[0];
      const reasons = error.details === undefined ? '' : ` (${Object.values(error.details).join('; ')})`;
      if (first !== undefined)
        throw new PaymentDeclinedError(`${error.message}${reasons}`, first, error.code, error.details);
    }
    throw error;
  }
  options.onTokenPayment?.(paid);
  const headers = new Headers(retry.headers);
  headers.set(paid.paymentHeaderName, paid.paymentHeader);
  const answer = (await fetchFollowing(base, new Request(retry.clone(), { headers }))).answer;
  // The seller says it settled: the gateway looks at the chain now (not awaited: the answer is the
  // caller's already, and the background worker confirms the payment anyway).
  if (paymentResponseOf(answer)?.success === true) {
    options.gateway.checkX402Payment(paid.paymentId).catch(() => {});
  }
  return answer;
}

interface UndeliveredPayment {
  /** The send's Idempotency-Key, while its answer is unknown. */
  readonly idempotencyKey?: string;
  /** The send's answer, once known: its proof is presented again instead of paying again. */
  readonly sent?: ResponseOf<'sendPayment'>;
}

/** The request's headers with the proof, in the header of the challenge's version. */
function proofHeaders(
  original: Headers,
  offer: Challenge,
  requirement: PaymentRequirements,
  sent: ResponseOf<'sendPayment'>,
): Headers {
  const headers = new Headers(original);
  const payload = { paymentProof: sent.paymentProof };
  if (offer.version === 2) {
    const paymentPayload: PaymentPayload = {
      x402Version: 2,
      resource: offer.resource,
      accepted: requirement,
      payload,
    };
    headers.set(PAYMENT_SIGNATURE_HEADER, encodePaymentSignatureHeader(paymentPayload));
  } else {
    headers.set(
      X_PAYMENT_HEADER,
      encodeHeaderJson({ x402Version: 1, scheme: requirement.scheme, network: requirement.network, payload }),
    );
  }
  return headers;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 20;

/**
 * `request` sent, with redirects followed here rather than by fetch, which keeps every header but
 * Authorization across origins: the proof is dropped on the way to another origin, which could otherwise
 * present it to the seller itself and take what the buyer paid for. `last` is the request that was
 * answered, unsent (its body intact), for the paid retry.
 */
async function fetchFollowing(
  base: typeof fetch,
  original: Request,
): Promise<{ answer: Response; last: Request }> {
  if (original.redirect !== 'follow') {
    const last = original.clone();
    return { answer: await base(original), last };
  }
  let request = new Request(original, { redirect: 'manual' });
  for (let hops = 0; ; hops++) {
    // Kept before sending, so a 307 or 308 can send the body again, and the paid retry too.
    const next = request.clone();
    const answer = await base(request);
    const location = answer.headers.get('location');
    if (!REDIRECTS.has(answer.status) || location === null) {
      return { answer, last: new Request(next, { redirect: 'follow' }) };
    }
    if (hops === MAX_REDIRECTS) throw new TypeError(`${original.url}: more than ${MAX_REDIRECTS} redirects`);
    await answer.body?.cancel();
    const target = new URL(location, next.url);
    const nextHeaders = new Headers(next.headers);
    if (target.origin !== new URL(next.url).origin) {
      for (const name of [PAYMENT_SIGNATURE_HEADER, X_PAYMENT_HEADER, 'authorization'])
        nextHeaders.delete(name);
    }
    // As fetch does: a 303, and a 301 or 302 of a POST, go on as a GET without the body.
    const asGet =
      (answer.status === 303 && next.method !== 'GET' && next.method !== 'HEAD') ||
      ((answer.status === 301 || answer.status === 302) && next.method === 'POST');
    if (asGet) {
      for (const name of [
        'content-type',
        'content-length',
        'content-encoding',
        'content-language',
        'content-location',
      ])
        nextHeaders.delete(name);
      request = new Request(target, {
        method: 'GET',
        headers: nextHeaders,
        redirect: 'manual',
        signal: next.signal,
      });
    } else {
      request = new Request(target, {
        method: next.method,
        headers: nextHeaders,
        body: next.body,
        redirect: 'manual',
        signal: next.signal,
        ...(next.body === null ? {} : { duplex: 'half' }),
      } as RequestInit);
    }
  }
}

/** The settlement a paid answer carries in PAYMENT-RESPONSE (or v1's X-PAYMENT-RESPONSE). */
export function paymentResponseOf(response: Response): SettleResponse | undefined {
  const header =
    response.headers.get(PAYMENT_RESPONSE_HEADER) ?? response.headers.get(X_PAYMENT_RESPONSE_HEADER);
  if (header === null) return undefined;
  try {
    return decodePaymentResponseHeader(header);
  } catch {
    return undefined;
  }
}

/** The 402's challenge: v2 from PAYMENT-REQUIRED, else the v1 body. Undefined when it holds none. */
async function readChallenge(response: Response): Promise<Challenge | undefined> {
  const header = response.headers.get(PAYMENT_REQUIRED_HEADER);
  if (header !== null) {
    const v2 = decodeHeaderJson(header);
    if (v2 === undefined || !Array.isArray(v2.accepts) || typeof v2.resource !== 'object') return undefined;
    return {
      version: 2,
      resource: v2.resource as ResourceInfo,
      accepts: v2.accepts.filter(isRequirement),
      sent: { header },
    };
  }
  const body = await boundedJson(response, MAX_CHALLENGE_BODY_BYTES);
  if (typeof body !== 'object' || body === null) return undefined;
  const accepts = (body as { accepts?: unknown }).accepts;
  if (!Array.isArray(accepts)) return undefined;
  // v1 requirements name the amount maxAmountRequired and carry the resource URL themselves.
  const v1 = accepts
    .filter((r): r is Record<string, unknown> => typeof r === 'object' && r !== null)
    .map((r): Record<string, unknown> => ({ ...r, amount: r.maxAmountRequired }));
  const first = v1[0];
  if (first === undefined || typeof first.resource !== 'string') return undefined;
  return { version: 1, resource: { url: first.resource }, accepts: v1.filter(isRequirement), sent: { body } };
}

/** A v1 challenge is a few hundred bytes; a seller's 402 body beyond this is not read into memory as one. */
const MAX_CHALLENGE_BODY_BYTES = 64 * 1024;

/** The body as JSON, or undefined when it is not JSON or longer than `limit` bytes (then it is not read further). */
async function boundedJson(response: Response, limit: number): Promise<unknown> {
  const reader = response.body?.getReader();
  if (reader === undefined) return undefined;
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      length += value.byteLength;
      if (length > limit) {
        // Not awaited: a clone's cancel settles only once the answer handed back is cancelled too.
        reader.cancel().catch(() => {});
        return undefined;
      }
      chunks.push(value);
    }
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** A whole number of atomic units, as x402 writes amounts; 78 digits hold any uint256. */
const ATOMIC_AMOUNT = /^\d{1,78}$/;

function isRequirement(value: unknown): value is PaymentRequirements {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    typeof r.scheme === 'string' &&
    typeof r.network === 'string' &&
    typeof r.payTo === 'string' &&
    typeof r.asset === 'string' &&
    typeof r.amount === 'string'
  );
}

/**
 * A URL's host name as the URL parser spells it (no port: a seller's proxy may listen on another port
 * than its app, and a spend policy's allowedHosts names hosts, not ports); undefined when it is no URL.
 */
function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname.toLowerCase().replace(/\.$/, '');
  } catch {
    return undefined;
  }
}
