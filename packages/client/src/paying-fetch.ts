import { randomUUID } from 'node:crypto';
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements, ResourceInfo, SettleResponse } from '@x402/core/types';
import { fromAtomicUnits, toAtomicUnits, toJsonNumber } from './decimal-amount.ts';
import type { Gate402Client, ResponseOf } from './gate402-client.ts';
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
  /** The fetch to wrap; default the global one. */
  readonly fetch?: typeof fetch;
}

/** A 402 offered a gate402 payment that the buyer's settings do not allow; nothing was paid. */
export class PaymentDeclinedError extends Error {
  override readonly name = 'PaymentDeclinedError';
  constructor(
    message: string,
    readonly requirement: PaymentRequirements,
  ) {
    super(message);
  }
}

/** A 402 challenge, whichever version carried it, with the version the buyer should answer in. */
interface Challenge {
  readonly version: 1 | 2;
  readonly resource: ResourceInfo;
  readonly accepts: readonly PaymentRequirements[];
}

/**
 * `fetch` that pays gate402-protected resources: on a 402 offering a `gate402-native` payment it pays
 * with POST /payment/send from `wallet` and repeats the request once with the proof (PAYMENT-SIGNATURE
 * for a v2 challenge, X-PAYMENT for v1). Any other answer, and a 402 with no gate402 option, is returned
 * as it is. A price above `maxAmount` throws {@link PaymentDeclinedError} before anything is paid.
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

  return async (input, init) => {
    const request = new Request(input, init);
    // Kept before the first attempt reads the body, so the paid retry can send it again.
    const retry = request.clone();
    const response = await base(request);
    if (response.status !== 402) return response;
    const offer = await readChallenge(response.clone());
    if (offer === undefined) return response;

    for (const requirement of offer.accepts) {
      if (requirement.scheme !== GATE402_NATIVE_SCHEME || requirement.asset !== NATIVE_ASSET) continue;
      if (options.network !== undefined && requirement.network !== options.network) continue;
      const network = await networks.resolve(options.wallet, requirement.network);
      if (network === undefined || network.family !== family) continue;

      const decimals = network.nativeCurrency.decimals;
      const atomic = BigInt(requirement.amount);
      if (atomic > toAtomicUnits(options.maxAmount, decimals)) {
        throw new PaymentDeclinedError(
          `${offer.resource.url} asks ${fromAtomicUnits(atomic, decimals)} ${network.nativeCurrency.symbol}, more than maxAmount ${options.maxAmount}`,
          requirement,
        );
      }
      const sent = await options.gateway.sendPayment(
        {
          walletAddress: options.wallet,
          recipientAddress: requirement.payTo,
          amount: toJsonNumber(fromAtomicUnits(atomic, decimals)),
          resource: offer.resource.url,
          network: network.id,
        },
        // One key per payment: a retried send inside the SDK can never pay twice.
        { idempotencyKey: `gate402-fetch-${randomUUID()}` },
      );
      options.onPayment?.(sent, requirement);
      const headers = new Headers(retry.headers);
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
          encodeHeaderJson({
            x402Version: 1,
            scheme: requirement.scheme,
            network: requirement.network,
            payload,
          }),
        );
      }
      return base(new Request(retry, { headers }));
    }
    return response;
  };
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
    return { version: 2, resource: v2.resource as ResourceInfo, accepts: v2.accepts.filter(isRequirement) };
  }
  const body: unknown = await response.json().catch(() => undefined);
  if (typeof body !== 'object' || body === null) return undefined;
  const accepts = (body as { accepts?: unknown }).accepts;
  if (!Array.isArray(accepts)) return undefined;
  // v1 requirements name the amount maxAmountRequired and carry the resource URL themselves.
  const v1 = accepts
    .filter((r): r is Record<string, unknown> => typeof r === 'object' && r !== null)
    .map((r): Record<string, unknown> => ({ ...r, amount: r.maxAmountRequired }));
  const first = v1[0];
  if (first === undefined || typeof first.resource !== 'string') return undefined;
  return { version: 1, resource: { url: first.resource }, accepts: v1.filter(isRequirement) };
}

function isRequirement(value: unknown): value is PaymentRequirements {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    typeof r.scheme === 'string' &&
    typeof r.network === 'string' &&
    typeof r.payTo === 'string' &&
    typeof r.asset === 'string' &&
    typeof r.amount === 'string' &&
    /^\d{1,78}$/.test(r.amount)
  );
}
