/** Block explorers of public networks by CAIP-2 reference; local chains have none. */
const SOLANA_CLUSTERS: Readonly<Record<string, string>> = {
  '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp': '',
  EtWTRABZaYq6iMfeYKouRu166VU2xqa1: '?cluster=devnet',
  '4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z': '?cluster=testnet',
};

const EVM_EXPLORERS: Readonly<Record<string, string>> = {
  '1': 'https://etherscan.io',
  '11155111': 'https://sepolia.etherscan.io',
  '8453': 'https://basescan.org',
  '84532': 'https://sepolia.basescan.org',
  '10': 'https://optimistic.etherscan.io',
  '42161': 'https://arbiscan.io',
  '137': 'https://polygonscan.com',
};

/** Where a person can look at a transaction, or undefined when the network has no public explorer. */
export function explorerTransactionUrl(network: string, signature: string): string | undefined {
  const [namespace, reference = ''] = network.split(':', 2);
  const tx = encodeURIComponent(signature);
  if (namespace === 'solana') {
    const cluster = SOLANA_CLUSTERS[reference];
    return cluster === undefined ? undefined : `https://explorer.solana.com/tx/${tx}${cluster}`;
  }
  if (namespace !== 'eip155') return undefined;
  const base = EVM_EXPLORERS[reference];
  return base === undefined ? undefined : `${base}/tx/${tx}`;
}
