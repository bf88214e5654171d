import type { Localnet } from '@gate402/localnet';
import { RpcEndpoints, type RpcObserver } from '../../src/chains/rpc-endpoints.ts';
import { SolanaAdapter } from '../../src/chains/solana/solana-adapter.ts';

export interface AdapterRoute {
  /** The RPC URLs the adapter uses, in order (the localnet's own, or proxies in front of it). */
  readonly urls: readonly string[];
  readonly wsUrl?: string | undefined;
  /** Several PubSub URLs, in order, with failover; absent: `wsUrl`. */
  readonly wsUrls?: readonly string[];
  readonly timeoutMs?: number;
  readonly downMs?: number;
  readonly observer?: RpcObserver;
  /** How long the slot feed stays on a fallback PubSub URL before trying the preferred ones again. */
  readonly slotFeedReturnMs?: number;
  /** The localnet's slot length; default 20 ms. */
  readonly slotMs?: number;
}

/** The gateway's Solana adapter for `localnet`, reached through `route` (failover list, limits, metrics). */
export function solanaAdapterFor(localnet: Localnet, route: AdapterRoute): SolanaAdapter {
  const [rpcUrl] = route.urls as [string];
  return new SolanaAdapter({
    info: {
      id: localnet.network,
      family: 'solana',
      name: 'Solana Localnet',
      nativeCurrency: { symbol: 'SOL', decimals: 9 },
      isDefault: true,
      isLocal: true,
      rpcUrl,
      wsUrl: route.wsUrl ?? route.wsUrls?.[0],
      // The localnet's USDC, as the embedded chain's adapter lists it: the built-in facilitator settles
      // only the mints its network lists.
      tokens: [{ symbol: 'USDC', address: localnet.usdcMint.address, decimals: localnet.usdcMint.decimals }],
    },
    rpcUrl,
    wsUrl: route.wsUrl ?? route.wsUrls?.[0],
    ...(route.wsUrls === undefined ? {} : { wsUrls: route.wsUrls }),
    slotFeedReturnMs: route.slotFeedReturnMs,
    endpoints: new RpcEndpoints({
      network: localnet.network,
      urls: route.urls,
      timeoutMs: route.timeoutMs ?? 8_000,
      downMs: route.downMs ?? 2_000,
      observer: route.observer,
    }),
    slotMs: route.slotMs ?? 20,
  });
}
