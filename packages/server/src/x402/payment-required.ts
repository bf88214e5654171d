import { caip2Of } from './network-names.ts';
import { MAX_X402_HEADER_DEPTH, MAX_X402_HEADER_LENGTH } from './payment-header.ts';
import { resourceUrl } from './payment-request.ts';

/**
 * A seller's 402 challenge (`PaymentRequired`), whichever version carried it: v2 in the
 * `PAYMENT-REQUIRED` header (base64 JSON), v1 as the JSON body `{x402Version: 1, accepts}`.
 */
export interface PaymentChallenge {
  readonly x402Version: 1 | 2;
  /** v2: the challenge's `resource` object, repeated in the payload; v1 names it per option. */
  readonly resource: Readonly<Record<string, unknown>> | undefined;
  /** Where the challenge says the resource is: v2 `resource.url`, v1 the options' `resource`. */
  readonly resourceUrls: readonly string[];
  readonly accepts: readonly PaymentOption[];
}

/** One `accepts` entry: as the seller wrote it (what is signed), and read. */
export interface PaymentOption {
  /** The entry as sent: the stock client signs over exactly this. */
  readonly raw: Readonly<Record<string, unknown>>;
  readonly scheme: string;
  /** As sent (a v1 name or a CAIP-2 id). */
  readonly networkAsSent: string;
  /** CAIP-2; undefined for a name x402 does not define. */
  readonly network: string | undefined;
  readonly asset: string;
  readonly payTo: string;
  /** Atomic units of `asset`. */
  readonly amount: bigint;
  readonly maxTimeoutSeconds: number;
  readonly extra: Readonly<Record<string, unknown>>;
}

/** What is wrong with a challenge, by the field (`paymentRequired.accepts[0].amount`). */
export class ChallengeError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field} ${problem}`);
  }
}

const ATOMIC = /^\d{1,78}$/;
/** More options than any seller offers; a longer list is refused rather than walked. */
export const MAX_PAYMENT_OPTIONS = 20;

/** The v2 header value (`PAYMENT-REQUIRED`), decoded and read; throws ChallengeError naming `field`. */
export function challengeFromHeader(value: string, field: string): PaymentChallenge {
  const trimmed = value.trim();
  if (trimmed.length > MAX_X402_HEADER_LENGTH || !/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) {
    throw new ChallengeError(field, 'must be the PAYMENT-REQUIRED header value (standard base64 of JSON)');
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(trimmed, 'base64').toString('utf8'));
  } catch {
    throw new ChallengeError(field, 'is not base64 of JSON');
  }
  return challengeFromJson(json, field);
}

/** A challenge as JSON (a v1 body, or a v2 header's JSON); throws ChallengeError naming the field. */
export function challengeFromJson(json: unknown, field: string): PaymentChallenge {
  const body = record(json);
  if (body === undefined || !nestsWithin(body, MAX_X402_HEADER_DEPTH)) {
    throw new ChallengeError(field, 'must be a PaymentRequired object');
  }
  const version = body.x402Version;
  if (version !== 1 && version !== 2) {
    throw new ChallengeError(`${field}.x402Version`, 'must be 1 or 2');
  }
  const accepts = body.accepts;
  if (!Array.isArray(accepts) || accepts.length === 0) {
    throw new ChallengeError(`${field}.accepts`, 'must be a non-empty array of payment requirements');
  }
  if (accepts.length > MAX_PAYMENT_OPTIONS) {
    throw new ChallengeError(`${field}.accepts`, `must hold at most ${MAX_PAYMENT_OPTIONS} options`);
  }
  const options = accepts.map((entry, i) => optionOf(entry, version, `${field}.accepts[${i}]`));
  let resource: Record<string, unknown> | undefined;
  const resourceUrls: string[] = [];
  if (version === 2) {
    resource = record(body.resource);
    const url = resource === undefined ? undefined : resourceUrl(resource.url);
    if (resource === undefined || url === undefined) {
      throw new ChallengeError(`${field}.resource.url`, 'must be an absolute URL');
    }
    resourceUrls.push(url);
  } else {
    options.forEach((option, i) => {
      const url = resourceUrl(option.raw.resource);
      if (url === undefined)
        throw new ChallengeError(`${field}.accepts[${i}].resource`, 'must be an absolute URL');
      resourceUrls.push(url);
    });
  }
  return { x402Version: version, resource, resourceUrls, accepts: options };
}

function optionOf(entry: unknown, version: 1 | 2, field: string): PaymentOption {
  const raw = record(entry);
  if (raw === undefined) throw new ChallengeError(field, 'must be an object');
  const text = (name: string): string => {
    const value = raw[name];
    if (typeof value !== 'string' || value.length === 0 || value.length > 200) {
      throw new ChallengeError(`${field}.${name}`, 'must be a non-empty string');
    }
    return value;
  };
  const amountName = version === 2 ? 'amount' : 'maxAmountRequired';
  const scheme = text('scheme');
  const networkAsSent = text('network');
  const asset = text('asset');
  const payTo = text('payTo');
  const amountText = text(amountName);
  if (!ATOMIC.test(amountText) || BigInt(amountText) === 0n) {
    throw new ChallengeError(`${field}.${amountName}`, 'must be a positive whole number of atomic units');
  }
  const timeout = raw.maxTimeoutSeconds;
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout <= 0) {
    throw new ChallengeError(`${field}.maxTimeoutSeconds`, 'must be a positive whole number of seconds');
  }
  const extra = raw.extra === undefined || raw.extra === null ? {} : record(raw.extra);
  if (extra === undefined) throw new ChallengeError(`${field}.extra`, 'must be an object');
  return {
    raw,
    scheme,
    networkAsSent,
    network: caip2Of(networkAsSent),
    asset,
    payTo,
    amount: BigInt(amountText),
    maxTimeoutSeconds: timeout,
    extra,
  };
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function nestsWithin(value: unknown, depth: number): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (depth === 0) return false;
  return Object.values(value).every((v) => nestsWithin(v, depth - 1));
}
