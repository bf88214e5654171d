import { canonicalAddress } from '../../chains/canonical-address.ts';
import type { ChainAdapter, TransferRestriction } from '../../chains/chain-adapter.ts';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { addressFamily } from '../../domain/address.ts';
import { type GatewayError, invalidParameters } from '../../domain/gateway-error.ts';
import type { PaymentRecord } from '../../domain/records/payment-records.ts';
import { invalidProof } from './proofs/proof-errors.ts';

/**
 * What a payment is paid in, as every answer that reports a payment shows it: the network's native
 * currency (`address: null`) or a token (its mint or contract). `symbol` is null for a token the
 * gateway knows no symbol for (one neither the network nor the operator lists, without on-chain metadata).
 */
export interface PaymentAsset {
  readonly symbol: string | null;
  readonly address: string | null;
  readonly decimals: number;
}

/** Longer than any real token's symbol (Metaplex allows 10 bytes): shown as unknown. */
const MAX_SYMBOL_LENGTH = 32;

export function nativeAssetOf(chain: ChainAdapter): PaymentAsset {
  const { symbol, decimals } = chain.info.nativeCurrency;
  return { symbol, address: null, decimals };
}

/**
 * The asset a seller states (`asset` of the receive and verify routes) on `chain`: absent, the native
 * currency (the spec's amounts are native); else a symbol GET /networks lists for the network (SOL,
 * USDC; any case), or a mint / contract address — a listed one, or any token the chain holds. Anything
 * else is INVALID_PARAMETERS naming `field`: a price in an asset the gateway cannot name is refused,
 * never guessed.
 */
export async function statedAsset(
  networks: NetworkRegistry,
  chain: ChainAdapter,
  stated: string | undefined,
  field = 'asset',
): Promise<PaymentAsset> {
  if (stated === undefined) return nativeAssetOf(chain);
  const text = stated.trim();
  const native = nativeAssetOf(chain);
  const tokens = networks.tokensOf(chain.info.id);
  const upper = text.toUpperCase();
  if (upper === native.symbol?.toUpperCase()) return native;
  const bySymbol = tokens.find((t) => t.symbol.toUpperCase() === upper);
  if (bySymbol !== undefined) return { ...bySymbol };
  if (addressFamily(text) !== chain.info.family) {
    throw invalidParameters({
      [field]: `must be ${[native.symbol, ...tokens.map((t) => t.symbol)].join(', ')} or a token address on ${chain.info.name} (GET /networks)`,
    });
  }
  const address = canonicalAddress(text);
  const known = tokens.find((t) => canonicalAddress(t.address) === address);
  if (known !== undefined) return { ...known };
  const token = await chain.getTokenInfo(address);
  if (token === undefined) throw invalidParameters({ [field]: `is not a token on ${chain.info.name}` });
  const symbol =
    token.symbol !== undefined && token.symbol !== '' && token.symbol.length <= MAX_SYMBOL_LENGTH
      ? token.symbol
      : null;
  return { symbol, address, decimals: token.decimals };
}

const RESTRICTION_TEXT: Readonly<Record<TransferRestriction, string>> = {
  'transfer-fee': 'a transfer fee (the recipient would get less than the amount)',
  'transfer-hook': "a transfer hook (a program of the mint's choosing runs in every transfer)",
  'permanent-delegate': 'a permanent delegate (the tokens could be taken back from the recipient)',
  'non-transferable': 'non-transferable tokens',
};

/**
 * The asset a payer sends in (`asset` of POST /payment/send and /transaction/send) on `chain`: named as
 * statedAsset reads it, then checked on chain to be a token a plain transfer pays with in full. A
 * Token-2022 mint with a transfer fee, a transfer hook, a permanent delegate or non-transferable tokens
 * is refused, naming the extension: the recipient would be paid less than the amount, or not for good.
 * Every refusal is INVALID_PARAMETERS naming `asset`, before anything is signed or recorded.
 */
export async function sendableAsset(
  networks: NetworkRegistry,
  chain: ChainAdapter,
  stated: string | undefined,
): Promise<PaymentAsset> {
  const asset = await statedAsset(networks, chain, stated);
  if (asset.address === null) return asset;
  const token = await chain.getTokenInfo(asset.address);
  if (token === undefined) throw invalidParameters({ asset: `is not a token on ${chain.info.name}` });
  if (token.decimals !== asset.decimals) {
    // A listing that disagrees with the chain: the amount would be priced in the wrong unit.
    throw invalidParameters({
      asset: `is listed with ${asset.decimals} decimals, but the token on ${chain.info.name} has ${token.decimals}`,
    });
  }
  if (token.transferRestrictions.length > 0) {
    const what = token.transferRestrictions.map((r) => RESTRICTION_TEXT[r]).join(', ');
    throw invalidParameters({ asset: `cannot be sent: the mint has ${what}` });
  }
  return asset;
}

/**
 * The asset of a recorded payment, for its views (status, history, events, webhooks): the native
 * currency of its network unless the payment names a token. The symbol is the network's or the
 * operator's listing of that token, null for a token neither lists.
 */
export function assetOfPayment(
  networks: NetworkRegistry,
  payment: Pick<PaymentRecord, 'network' | 'asset'>,
): PaymentAsset {
  const chain = networks.get(payment.network);
  if (payment.asset === undefined) {
    return chain === undefined
      ? { symbol: null, address: null, decimals: NATIVE_DECIMALS_UNKNOWN_NETWORK }
      : nativeAssetOf(chain);
  }
  const address = payment.asset.address;
  const listed = networks
    .tokensOf(payment.network)
    .find((t) => canonicalAddress(t.address) === canonicalAddress(address));
  return { symbol: listed?.symbol ?? null, address, decimals: payment.asset.decimals };
}

/** A network no longer configured: its payments are shown in 9 decimals, as before assets were shown. */
const NATIVE_DECIMALS_UNKNOWN_NETWORK = 9;

/** Whether a payment in `paid` (a token address, or null for the native currency) is in `asset`. */
export function isSameAsset(asset: PaymentAsset, paid: string | null): boolean {
  if (asset.address === null || paid === null) return asset.address === paid;
  return canonicalAddress(asset.address) === canonicalAddress(paid);
}

/** The refusal of a payment in another asset than the one stated: before anything is consumed or settled. */
export function assetMismatch(asset: PaymentAsset, paid: string, chain: ChainAdapter): GatewayError {
  const asked =
    asset.address === null
      ? (asset.symbol ?? chain.info.nativeCurrency.symbol)
      : `${asset.symbol ?? 'the token'} ${asset.address}`;
  return invalidProof(`the payment is in ${paid}, not in ${asked} as asked`, 'asset_mismatch');
}

/**
 * What a receive or verify request asks of the payment besides its amount: the network it must be on
 * and the asset it must be in. The network is always pinned: the request's `network`, else the default
 * network of the wallet's family. A symbol or a token address means something on one network only, and
 * so does a native price: an address is valid on every network of its family, so "0.01 ETH" without a
 * network would be paid as well in a testnet's free ETH (or a second Solana cluster's SOL) as in the
 * seller's. Without an asset the payment must be in that network's native currency.
 */
export async function statedTerms(
  networks: NetworkRegistry,
  input: {
    readonly address: string;
    readonly network?: string | undefined;
    readonly asset?: string | undefined;
  },
  field: string,
): Promise<{ network: string; asset: PaymentAsset | undefined }> {
  // Resolved first, so a network that is not configured, or not the wallet's family, is a 400.
  const chain = networks.resolve({ address: input.address, network: input.network, field });
  return {
    network: chain.info.id,
    asset: input.asset === undefined ? undefined : await statedAsset(networks, chain, input.asset),
  };
}
