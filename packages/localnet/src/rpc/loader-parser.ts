// jsonParsed accounts of the upgradeable BPF loader and the address lookup table program, as Agave's
// account decoder answers them (`parse_bpf_loader.rs`, `parse_address_lookup_table.rs`):
// `{ type, info }` under programs "bpf-upgradeable-loader" and "address-lookup-table". Undefined when
// the data does not deserialize (the account is then answered in base64, as Agave falls back).
import { encodeBase58 } from '../wire/base58.ts';

export const BPF_UPGRADEABLE_LOADER = 'BPFLoaderUpgradeab1e11111111111111111111111';
export const ADDRESS_LOOKUP_TABLE_PROGRAM = 'AddressLookupTab1e1111111111111111111111111';

/** UpgradeableLoaderState's metadata sizes: enum tag, then its fields (bincode). */
const BUFFER_METADATA = 4 + 1 + 32;
const PROGRAMDATA_METADATA = 4 + 8 + 1 + 32;
const PROGRAM_SIZE = 4 + 32;
/** AddressLookupTable's LOOKUP_TABLE_META_SIZE: the addresses start here. */
const LOOKUP_TABLE_META_SIZE = 56;

type Parsed = { type: string; info?: Record<string, unknown> };

/** A bincode Option<Pubkey> at `at`: [value, bytes read]; undefined when the tag is not 0 or 1. */
function optionalKey(data: Buffer, at: number): [string | null, number] | undefined {
  const tag = data[at];
  if (tag === 0) return [null, 1];
  if (tag === 1 && at + 33 <= data.length) return [encodeBase58(data.subarray(at + 1, at + 33)), 33];
  return undefined;
}

export function parseUpgradeableLoaderAccount(bytes: Uint8Array): Parsed | undefined {
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (data.length < 4) return undefined;
  switch (data.readUInt32LE(0)) {
    case 0:
      return { type: 'uninitialized' };
    case 1: {
      const authority = optionalKey(data, 4);
      if (!authority) return undefined;
      // As Agave: without an authority the data is taken from 32 bytes earlier.
      const offset = authority[0] === null ? BUFFER_METADATA - 32 : BUFFER_METADATA;
      return {
        type: 'buffer',
        info: { authority: authority[0], data: [data.subarray(offset).toString('base64'), 'base64'] },
      };
    }
    case 2:
      if (data.length < PROGRAM_SIZE) return undefined;
      return { type: 'program', info: { programData: encodeBase58(data.subarray(4, 36)) } };
    case 3: {
      if (data.length < 13) return undefined;
      const slot = data.readBigUInt64LE(4);
      const authority = optionalKey(data, 12);
      if (!authority) return undefined;
      const offset = authority[0] === null ? PROGRAMDATA_METADATA - 32 : PROGRAMDATA_METADATA;
      return {
        type: 'programData',
        info: { slot, authority: authority[0], data: [data.subarray(offset).toString('base64'), 'base64'] },
      };
    }
    default:
      return undefined;
  }
}

export function parseAddressLookupTable(bytes: Uint8Array): Parsed | undefined {
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (data.length < LOOKUP_TABLE_META_SIZE) return undefined;
  const kind = data.readUInt32LE(0);
  if (kind === 0) return { type: 'uninitialized' };
  if (kind !== 1) return undefined;
  const authority = optionalKey(data, 21);
  if (!authority) return undefined;
  if ((data.length - LOOKUP_TABLE_META_SIZE) % 32 !== 0) return undefined;
  const addresses: string[] = [];
  for (let at = LOOKUP_TABLE_META_SIZE; at < data.length; at += 32)
    addresses.push(encodeBase58(data.subarray(at, at + 32)));
  const info: Record<string, unknown> = {
    deactivationSlot: data.readBigUInt64LE(4).toString(),
    lastExtendedSlot: data.readBigUInt64LE(12).toString(),
    lastExtendedSlotStartIndex: data[20],
  };
  // Agave leaves `authority` out of a frozen table.
  if (authority[0] !== null) info.authority = authority[0];
  info.addresses = addresses;
  return { type: 'lookupTable', info };
}
