import type { PublicClient } from 'viem';

/**
 * The first block stamped at or after `unixSeconds` (the latest block when none is yet), found by a
 * binary search on block timestamps, which never decrease: about log2(height) reads, for the rare
 * look back to a moment no block number was kept for.
 */
export async function firstBlockSince(
  client: Pick<PublicClient, 'getBlock'>,
  unixSeconds: bigint,
): Promise<bigint> {
  const latest = await client.getBlock({ blockTag: 'latest' });
  if (latest.timestamp < unixSeconds) return latest.number;
  let low = 0n;
  let high = latest.number;
  while (low < high) {
    const middle = (low + high) / 2n;
    const block = await client.getBlock({ blockNumber: middle });
    if (block.timestamp < unixSeconds) low = middle + 1n;
    else high = middle;
  }
  return low;
}
