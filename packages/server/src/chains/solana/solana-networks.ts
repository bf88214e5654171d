import type { TokenInfo } from '../../domain/network.ts';

/** Public Solana clusters by the CAIP-2 reference (the first 32 characters of the genesis hash). */
export const KNOWN_SOLANA_CLUSTERS: Readonly<
  Record<string, { name: string; usdc?: TokenInfo; explorerCluster?: string }>
> = {
  '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp': {
    name: 'Solana Mainnet',
    usdc: { symbol: 'USDC', address: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', decimals: 6 },
  },
  EtWTRABZaYq6iMfeYKouRu166VU2xqa1: {
    name: 'Solana Devnet',
    usdc: { symbol: 'USDC', address: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU', decimals: 6 },
  },
  '4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z': { name: 'Solana Testnet' },
};

export const LAMPORTS_DECIMALS = 9;

/** CAIP-2 id of a Solana cluster from its genesis hash. */
export function solanaNetworkId(genesisHash: string): `solana:${string}` {
  return `solana:${genesisHash.slice(0, 32)}`;
}
