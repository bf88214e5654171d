import type { TokenInfo } from '../../domain/network.ts';

export const WEI_DECIMALS = 18;

/** Public EVM chains gate402 knows by chain id: a display name, the native symbol and Circle's USDC. */
export const KNOWN_EVM_CHAINS: Readonly<
  Record<number, { readonly name: string; readonly nativeSymbol: string; readonly usdc?: string }>
> = {
  1: { name: 'Ethereum', nativeSymbol: 'ETH', usdc: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48' },
  11155111: {
    name: 'Ethereum Sepolia',
    nativeSymbol: 'ETH',
    usdc: '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238',
  },
  8453: { name: 'Base', nativeSymbol: 'ETH', usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' },
  84532: { name: 'Base Sepolia', nativeSymbol: 'ETH', usdc: '0x036CbD53842c5426634e7929541eC2318f3dCF7e' },
  10: { name: 'OP Mainnet', nativeSymbol: 'ETH', usdc: '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85' },
  42161: { name: 'Arbitrum One', nativeSymbol: 'ETH', usdc: '0xaf88d065e77c8cC2239327C5EDb3A432268e5831' },
  137: { name: 'Polygon PoS', nativeSymbol: 'POL', usdc: '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359' },
};

/**
 * Blocks on top of a transaction's block after which gate402 calls it final on a node that has no
 * `finalized` block tag (every client of the networks below has one; this is the fallback). Chosen to
 * be at least the network's own finality: Ethereum and Sepolia finalize after two epochs (64 blocks);
 * OP-stack chains (Base, OP) once their batch is in a finalized L1 block, about 15-20 min (900 blocks
 * of 2 s = 30 min); Arbitrum One the same through its L1 batch (4,800 blocks of 0.25 s = 20 min); Polygon PoS by its
 * checkpointed milestones (256 blocks, the depth its own guidance used before milestones). Other
 * chains: 64. An embedded anvil answers the tag itself (latest less 2 × --slots-in-an-epoch).
 */
const FINALITY_CONFIRMATIONS: Readonly<Record<number, number>> = {
  1: 64,
  11155111: 64,
  8453: 900,
  84532: 900,
  10: 900,
  42161: 4_800,
  137: 256,
};
export const DEFAULT_FINALITY_CONFIRMATIONS = 64;

/** See FINALITY_CONFIRMATIONS. */
export function finalityConfirmationsOf(chainId: number): bigint {
  return BigInt(FINALITY_CONFIRMATIONS[chainId] ?? DEFAULT_FINALITY_CONFIRMATIONS);
}

/** The known USDC of a chain as a network token, or none. */
export function knownTokens(chainId: number): TokenInfo[] {
  const usdc = KNOWN_EVM_CHAINS[chainId]?.usdc;
  return usdc === undefined ? [] : [{ symbol: 'USDC', address: usdc, decimals: 6 }];
}

/** CAIP-2 id of an EVM chain. */
export function evmNetworkId(chainId: number): `eip155:${string}` {
  return `eip155:${chainId}`;
}
