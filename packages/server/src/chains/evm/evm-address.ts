import { getAddress } from 'viem';

/** The EIP-55 checksummed spelling of a 0x address given in any case. */
export function checksummedEvmAddress(address: string): string {
  return getAddress(address);
}
