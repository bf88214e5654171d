import { SOLANA_DEVNET_ID, SOLANA_MAINNET_ID } from '../chains/solana/solana-clusters.ts';

/**
 * x402 v1 names networks by name, v2 by CAIP-2 id. These are the v1 names x402 clients send for the
 * networks gate402 can serve (Solana clusters by genesis hash, EVM chains by chain id).
 */
export const V1_NETWORK_NAMES: Readonly<Record<string, string>> = {
  solana: SOLANA_MAINNET_ID,
  'solana-devnet': SOLANA_DEVNET_ID,
  base: 'eip155:8453',
  'base-sepolia': 'eip155:84532',
  ethereum: 'eip155:1',
  sepolia: 'eip155:11155111',
  polygon: 'eip155:137',
  'polygon-amoy': 'eip155:80002',
  optimism: 'eip155:10',
  arbitrum: 'eip155:42161',
  avalanche: 'eip155:43114',
  'avalanche-fuji': 'eip155:43113',
};

/** Solana devnet's CAIP-2 id: the id stock `@x402/svm` clients use to reach the embedded localnet. */
export { SOLANA_DEVNET_ID } from '../chains/solana/solana-clusters.ts';

/** The CAIP-2 id a v1 network name or a v2 id stands for; undefined for names x402 does not define. */
export function caip2Of(network: string): string | undefined {
  if (/^(solana|eip155):[A-Za-z0-9]+$/.test(network)) return network;
  return V1_NETWORK_NAMES[network];
}

/** The v1 name of a CAIP-2 id, if x402 v1 has one. */
export function v1NameOf(caip2: string): string | undefined {
  return Object.entries(V1_NETWORK_NAMES).find(([, id]) => id === caip2)?.[0];
}
