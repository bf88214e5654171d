/** Block explorers of public EVM networks by chain id; local chains have none. */
const EXPLORERS: Readonly<Record<string, string>> = {
  '1': 'https://etherscan.io',
  '11155111': 'https://sepolia.etherscan.io',
  '8453': 'https://basescan.org',
  '84532': 'https://sepolia.basescan.org',
  '10': 'https://optimistic.etherscan.io',
  '42161': 'https://arbiscan.io',
  '137': 'https://polygonscan.com',
};

/** The explorer's page of transaction `id` (URL-encoded) on chain `reference`, if it has a known explorer. */
export function evmExplorerUrl(reference: string, id: string): string | undefined {
  const base = Object.hasOwn(EXPLORERS, reference) ? EXPLORERS[reference] : undefined;
  return base === undefined ? undefined : `${base}/tx/${id}`;
}
