import { isEvmAddress } from '../domain/address.ts';
import { checksummedEvmAddress } from './evm/evm-address.ts';

/**
 * The one spelling gate402 stores and compares an address in. An EVM address names the same account in
 * any letter case, so it is kept EIP-55 checksummed (as chains report it): otherwise `0xab…` and `0xAB…`
 * could be registered as two wallets, or a proof for one would not match the other. Solana addresses
 * are case-sensitive and stay as given. Anything that is not an address is returned unchanged.
 */
export function canonicalAddress(address: string): string {
  return isEvmAddress(address) ? checksummedEvmAddress(address) : address;
}
