import type { ExactRequirements } from '../chains/exact-scheme.ts';
import type { X402Reason } from '../domain/x402-reasons.ts';
import { caip2Of } from './network-names.ts';

/**
 * One x402 payment to verify or settle, whichever protocol version carried it: the payload the buyer
 * signed and the requirements the seller set, with the network as a CAIP-2 id and the amount a bigint.
 */
export interface X402Payment {
  readonly x402Version: 1 | 2;
  readonly scheme: string;
  /** The network as the request named it (a v1 name or a CAIP-2 id): answers repeat it. */
  readonly networkAsSent: string;
  /** CAIP-2 id; undefined when the name is not one x402 defines. */
  readonly network: string | undefined;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly requirements: Omit<ExactRequirements, 'network'>;
  /**
   * What the payment is for, recorded on the seller's payment: the resource the seller named to POST
   * /payment/receive, else the one the request names (v2: the payload's `resource.url`; v1: the
   * requirements' `resource`). Informational: no signature covers it.
   */
  readonly resource?: string;
}

/**
 * A resource URL as an x402 request names it, kept when it is one a payment may store: an absolute URL
 * within the API's own bound, without control characters — it comes from whoever made the payload, and
 * PostgreSQL refuses text with NUL in it. Anything else is as if the request named none.
 */
export function resourceUrl(value: unknown): string | undefined {
  return typeof value === 'string' &&
    value.length <= MAX_RESOURCE_LENGTH &&
    !CONTROL_CHARACTER.test(value) &&
    URL.canParse(value)
    ? value
    : undefined;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is its purpose
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/** The longest resource the API takes (the `resource` field of send and receive). */
const MAX_RESOURCE_LENGTH = 2048;

export type ParsedPayment =
  | { readonly ok: true; readonly payment: X402Payment }
  | { readonly ok: false; readonly reason: X402Reason; readonly message: string };

const ATOMIC = /^\d{1,78}$/;

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** The payload extensions a scheme reads beside the payload itself (EVM exact with Permit2: gas sponsoring). */
const SCHEME_EXTENSIONS = ['eip2612GasSponsoring', 'erc20ApprovalGasSponsoring'] as const;

/**
 * The payload a scheme is given: x402's `payload`, with those of the v2 payment's top-level `extensions`
 * the scheme itself reads (SCHEME_EXTENSIONS) under `extensions`, if any. The buyer signs neither: the
 * scheme checks what it takes from them as it checks the payload.
 */
export function schemePayloadOf(
  inner: Record<string, unknown>,
  extensions: unknown,
): Record<string, unknown> {
  const all = record(extensions);
  if (all === undefined) return inner;
  const read = SCHEME_EXTENSIONS.filter((key) => all[key] !== undefined);
  return read.length === 0
    ? inner
    : { ...inner, extensions: Object.fromEntries(read.map((k) => [k, all[k]])) };
}

/**
 * Reads a facilitator request (`{x402Version, paymentPayload, paymentRequirements}`) in the v1 or v2
 * shape. A shape that does not fit is a refusal with an x402 reason, not an exception.
 */
export function parsePaymentRequest(paymentPayload: unknown, paymentRequirements: unknown): ParsedPayment {
  const payload = record(paymentPayload);
  const req = record(paymentRequirements);
  if (payload === undefined || req === undefined) {
    return {
      ok: false,
      reason: 'invalid_payload',
      message: 'paymentPayload and paymentRequirements must be objects',
    };
  }
  const version = payload.x402Version;
  if (version !== 1 && version !== 2) {
    return { ok: false, reason: 'invalid_x402_version', message: 'x402Version must be 1 or 2' };
  }
  const accepted = version === 2 ? record(payload.accepted) : payload;
  const inner = record(payload.payload);
  if (accepted === undefined || inner === undefined) {
    return {
      ok: false,
      reason: 'invalid_payload',
      message: 'paymentPayload lacks its payload or accepted requirements',
    };
  }
  const amountText = version === 2 ? req.amount : req.maxAmountRequired;
  const { scheme, network, asset, payTo, maxTimeoutSeconds } = req;
  if (
    typeof scheme !== 'string' ||
    typeof network !== 'string' ||
    typeof asset !== 'string' ||
    typeof payTo !== 'string' ||
    typeof amountText !== 'string' ||
    !ATOMIC.test(amountText)
  ) {
    return {
      ok: false,
      reason: 'invalid_payment_requirements',
      message: `paymentRequirements needs scheme, network, asset, payTo and ${version === 2 ? 'amount' : 'maxAmountRequired'} (atomic units as a decimal string)`,
    };
  }
  if (accepted.scheme !== scheme) {
    return { ok: false, reason: 'invalid_scheme', message: 'the payload was made for another scheme' };
  }
  if (accepted.network !== network) {
    return { ok: false, reason: 'invalid_network', message: 'the payload was made for another network' };
  }
  const resource = resourceUrl(version === 2 ? record(payload.resource)?.url : req.resource);
  return {
    ok: true,
    payment: {
      x402Version: version,
      scheme,
      networkAsSent: network,
      network: caip2Of(network),
      payload: schemePayloadOf(inner, version === 2 ? payload.extensions : undefined),
      requirements: {
        asset,
        payTo,
        amount: BigInt(amountText),
        maxTimeoutSeconds:
          typeof maxTimeoutSeconds === 'number' && maxTimeoutSeconds > 0 ? maxTimeoutSeconds : 60,
        extra: record(req.extra) ?? {},
      },
      ...(resource === undefined ? {} : { resource }),
    },
  };
}
