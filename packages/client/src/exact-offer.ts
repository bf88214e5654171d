import type { PaymentRequirements } from '@x402/core/types';
import { toAtomicUnits } from './decimal-amount.ts';
import type { Gate402Client } from './gate402-client.ts';

/** The standard x402 `exact` token payment a protected resource may offer beside the native one. */
export interface ExactTokenOption {
  /** The token: an SPL Token or Token-2022 mint, or an ERC-20 contract (EIP-3009, or any through Permit2). */
  readonly asset: string;
  /** The price in whole tokens, as a decimal: `'0.01'` USDC. */
  readonly amount: string | number;
  /** CAIP-2 id the buyer pays on; default the network of the native offer. Must be in GET /facilitator/supported. */
  readonly network?: string;
  /** Who is paid; default `payTo`. On Solana its token account for `asset` must already exist. */
  readonly payTo?: string;
  /**
   * Added to the requirement's `extra`. On EVM the token's EIP-712 domain, e.g. `{name: 'USD Coin',
   * version: '2'}`, for an EIP-3009 payment; without it (or with `assetTransferMethod: 'permit2'`) the
   * offer is a Permit2 payment, which works for any ERC-20 the buyer approved Permit2 for.
   */
  readonly extra?: Readonly<Record<string, unknown>>;
}

export const EXACT_SCHEME = 'exact';

/**
 * The `exact` requirement for a resource, completed from the gateway: the token's decimals
 * (GET /token/info) and, on Solana, the facilitator's fee payer (GET /facilitator/supported, Premium plan).
 */
export async function exactRequirement(
  gateway: Gate402Client,
  option: ExactTokenOption,
  defaults: { network: string; payTo: string; maxTimeoutSeconds: number },
): Promise<PaymentRequirements> {
  const network = option.network ?? defaults.network;
  const [token, supported] = await Promise.all([
    gateway.tokenInfo(option.asset),
    gateway.facilitatorSupported(),
  ]);
  const kind = supported.kinds.find(
    (k) => k.scheme === EXACT_SCHEME && k.network === network && k.x402Version === 2,
  );
  if (kind === undefined) {
    throw new Error(`the gateway's facilitator does not settle exact payments on ${network}`);
  }
  return {
    scheme: EXACT_SCHEME,
    network: network as PaymentRequirements['network'],
    asset: option.asset,
    amount: tokenAmount(option.amount, token.decimals, option.asset),
    payTo: option.payTo ?? defaults.payTo,
    maxTimeoutSeconds: defaults.maxTimeoutSeconds,
    extra: requirementExtra(kind.extra ?? {}, option.extra ?? {}),
  };
}

/** `amount` whole tokens in atomic units, or an error naming the token when it has fewer decimals. */
function tokenAmount(amount: string | number, decimals: number, asset: string): string {
  try {
    return toAtomicUnits(amount, decimals).toString();
  } catch (error) {
    throw new RangeError(`amount ${amount}: ${asset} has ${decimals} decimals`, { cause: error });
  }
}

/**
 * What the requirement's `extra` says: the facilitator's Solana fee payer (buyers put it in the
 * transaction), and on EVM how the token moves. A buyer signs EIP-3009 only with the token's EIP-712
 * domain; where the seller gives none and the facilitator settles Permit2, the offer is Permit2.
 */
function requirementExtra(
  kind: Readonly<Record<string, unknown>>,
  option: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const extra: Record<string, unknown> = kind.feePayer === undefined ? {} : { feePayer: kind.feePayer };
  const methods = Array.isArray(kind.assetTransferMethods) ? kind.assetTransferMethods : [];
  const hasDomain = option.name !== undefined && option.version !== undefined;
  if (methods.includes('permit2') && !hasDomain && option.assetTransferMethod === undefined) {
    extra.assetTransferMethod = 'permit2';
  }
  return { ...extra, ...option };
}
