// A 32-byte key as a latin1 string: a cheap Map/Set key for hot paths, where base58 would cost
// microseconds per key.
import { decodeBase58 } from './base58.ts';

export function rawKey(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}

/** The raw key of a base58 address constant. */
export function rawKeyOf(address: string): string {
  const bytes = decodeBase58(address);
  if (bytes?.length !== 32) throw new Error(`not an address: ${address}`);
  return rawKey(bytes);
}
