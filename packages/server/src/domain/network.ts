import type { ChainFamily } from './address.ts';

/** A CAIP-2 network id: `solana:<genesis hash prefix>` or `eip155:<chain id>`. */
export type NetworkId = `solana:${string}` | `eip155:${string}`;

const CAIP2 = /^(solana:[1-9A-HJ-NP-Za-km-z]{32,44}|eip155:\d{1,18})$/;

export function isNetworkId(value: string): value is NetworkId {
  return CAIP2.test(value);
}

/** A token the gateway knows on a network. */
export interface TokenInfo {
  readonly symbol: string;
  /** Mint (Solana) or contract (EVM) address. */
  readonly address: string;
  readonly decimals: number;
}

/** What callers are told about a configured network (GET /networks). */
export interface NetworkInfo {
  readonly id: NetworkId;
  readonly family: ChainFamily;
  readonly name: string;
  readonly nativeCurrency: { readonly symbol: string; readonly decimals: number };
  /** The network used for this family when a request names none. */
  readonly isDefault: boolean;
  /** A chain on this machine (embedded localnet, anvil): the faucet works only here. */
  readonly isLocal: boolean;
  /** Where a local-mode caller broadcasts the transactions it signs. */
  readonly rpcUrl: string;
  readonly wsUrl: string | undefined;
  readonly tokens: readonly TokenInfo[];
}
