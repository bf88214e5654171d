import { decodeBase58 } from './base58.ts';

/** The two families of chains gate402 speaks to; an address's shape tells which one it belongs to. */
export const CHAIN_FAMILIES = ['solana', 'evm'] as const;
export type ChainFamily = (typeof CHAIN_FAMILIES)[number];

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BASE58_32_BYTES = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

/** A Solana address: base58 text of exactly 32 bytes. */
export function isSolanaAddress(value: string): boolean {
  return BASE58_32_BYTES.test(value) && decodeBase58(value)?.length === 32;
}

/** An EVM address: `0x` and 20 bytes of hex (any case; the checksum is not required). */
export function isEvmAddress(value: string): boolean {
  return EVM_ADDRESS.test(value);
}

export function addressFamily(value: string): ChainFamily | undefined {
  if (isEvmAddress(value)) return 'evm';
  if (isSolanaAddress(value)) return 'solana';
  return undefined;
}
