/** The public Solana clusters' CAIP-2 ids (the genesis hash's first 32 characters). */
export const SOLANA_MAINNET_ID = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
export const SOLANA_DEVNET_ID = 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
export const SOLANA_TESTNET_ID = 'solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z';

/** The Solana Explorer's cluster parameter by CAIP-2 reference; local chains have no explorer. */
const EXPLORER_CLUSTERS: Readonly<Record<string, string>> = {
  [SOLANA_MAINNET_ID.slice('solana:'.length)]: '',
  [SOLANA_DEVNET_ID.slice('solana:'.length)]: '?cluster=devnet',
  [SOLANA_TESTNET_ID.slice('solana:'.length)]: '?cluster=testnet',
};

/** The Solana Explorer's page of transaction `id` (URL-encoded) on the cluster `reference`, if public. */
export function solanaExplorerUrl(reference: string, id: string): string | undefined {
  const cluster = Object.hasOwn(EXPLORER_CLUSTERS, reference) ? EXPLORER_CLUSTERS[reference] : undefined;
  return cluster === undefined ? undefined : `https://explorer.solana.com/tx/${id}${cluster}`;
}
