import { type Address, address, getAddressEncoder, getProgramDerivedAddress } from '@solana/kit';
import { BorshReader, type TokenMetadata } from './mint-account.ts';

/** Metaplex Token Metadata program: the common home of SPL Token names and symbols. */
export const METAPLEX_METADATA_PROGRAM = 'metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s';
const KEY_METADATA_V1 = 4;

/** The metadata account of `mint`: the PDA of ["metadata", program, mint]. */
export async function metaplexMetadataAddress(mint: string): Promise<Address> {
  const program = address(METAPLEX_METADATA_PROGRAM);
  const encoder = getAddressEncoder();
  const [pda] = await getProgramDerivedAddress({
    programAddress: program,
    seeds: ['metadata', encoder.encode(program), encoder.encode(address(mint))],
  });
  return pda;
}

/**
 * Decodes a Metaplex metadata account (key, update authority, mint, then Borsh name, symbol, uri).
 * Metaplex pads the three strings with NUL bytes to fixed lengths; those are trimmed.
 */
export function decodeMetaplexMetadata(data: Uint8Array): TokenMetadata | undefined {
  if (data[0] !== KEY_METADATA_V1) return undefined;
  const reader = new BorshReader(data, 1 + 32 + 32);
  const [name, symbol, uri] = [reader.string(), reader.string(), reader.string()];
  if (name === undefined || symbol === undefined || uri === undefined) return undefined;
  const trim = (text: string) => text.replace(/\0+$/, '');
  return { name: trim(name), symbol: trim(symbol), uri: trim(uri) };
}
