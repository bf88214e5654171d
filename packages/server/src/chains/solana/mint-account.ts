import { getBase58Decoder } from '@solana/kit';
import type { TransferRestriction } from '../chain-adapter.ts';

/** The SPL Token program and Token-2022 (Token Extensions), by address. */
export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';

/** What a mint account holds, with Token-2022's embedded metadata when it has some. */
export interface MintAccount {
  readonly decimals: number;
  readonly supply: bigint;
  readonly mintAuthority: string | null;
  readonly freezeAuthority: string | null;
  /** Token-2022 MetadataPointer extension: where the mint says its metadata lives. */
  readonly metadataAddress: string | null;
  /** Token-2022 TokenMetadata extension, stored in the mint account itself. */
  readonly metadata: TokenMetadata | undefined;
  /** Token-2022 extensions that make a plain transfer unsafe to pay with (ChainTokenInfo.transferRestrictions). */
  readonly transferRestrictions: readonly TransferRestriction[];
  /**
   * Bytes of a new associated token account of this mint: 165 for SPL Token; Token-2022 adds its
   * account type, ImmutableOwner and each account extension the mint's extensions require.
   */
  readonly tokenAccountSize: number;
}

export interface TokenMetadata {
  readonly name: string;
  readonly symbol: string;
  readonly uri: string;
}

/** spl-token's Mint::LEN; a Token-2022 mint with extensions pads to the token account size first. */
const MINT_SIZE = 82;
const ACCOUNT_SIZE = 165;
const ACCOUNT_TYPE_MINT = 1;
const EXTENSION_METADATA_POINTER = 18;
const EXTENSION_TOKEN_METADATA = 19;
/** Token-2022's ExtensionType numbers of the mint extensions that restrict transfers. */
const RESTRICTING_EXTENSIONS: ReadonlyMap<number, TransferRestriction> = new Map([
  [1, 'transfer-fee'],
  [9, 'non-transferable'],
  [12, 'permanent-delegate'],
  [14, 'transfer-hook'],
]);
/**
 * Mint extension → the account extension Token-2022 gives every new token account of it, with its
 * value's length (spl-token-2022 `get_required_init_account_extensions`): TransferFeeConfig →
 * TransferFeeAmount (8), NonTransferable → NonTransferableAccount (0), TransferHook →
 * TransferHookAccount (1), Pausable → PausableAccount (0).
 */
const ACCOUNT_EXTENSION_LENGTHS: ReadonlyMap<number, number> = new Map([
  [1, 8],
  [9, 0],
  [14, 1],
  [26, 0],
]);
/** A Token-2022 associated token account: account, account type, ImmutableOwner (empty TLV). */
const TOKEN_2022_ACCOUNT_SIZE = ACCOUNT_SIZE + 1 + 4;

const base58 = getBase58Decoder();

/**
 * Decodes a mint account's raw data owned by `program`; undefined when it is not an initialized mint.
 * Decoded here rather than read from `jsonParsed`, so the same code serves every RPC endpoint
 * (not all of them parse Token-2022 extensions).
 */
export function decodeMintAccount(data: Uint8Array, program: string): MintAccount | undefined {
  if (program !== TOKEN_PROGRAM && program !== TOKEN_2022_PROGRAM) return undefined;
  if (data.length < MINT_SIZE) return undefined;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (data[45] !== 1) return undefined; // is_initialized
  if (data.length !== MINT_SIZE) {
    // Only Token-2022 mints are longer, and then they are typed: a token account is not a mint.
    if (
      program !== TOKEN_2022_PROGRAM ||
      data.length <= ACCOUNT_SIZE ||
      data[ACCOUNT_SIZE] !== ACCOUNT_TYPE_MINT
    )
      return undefined;
  }
  const extensions = data.length > ACCOUNT_SIZE ? readExtensions(data.subarray(ACCOUNT_SIZE + 1)) : new Map();
  const pointer = extensions.get(EXTENSION_METADATA_POINTER);
  const embedded = extensions.get(EXTENSION_TOKEN_METADATA);
  return {
    mintAuthority: optionalKey(view.getUint32(0, true), data.subarray(4, 36)),
    supply: view.getBigUint64(36, true),
    decimals: data[44] ?? 0,
    freezeAuthority: optionalKey(view.getUint32(46, true), data.subarray(50, 82)),
    metadataAddress:
      pointer !== undefined && pointer.length >= 64 ? nonZeroKey(pointer.subarray(32, 64)) : null,
    metadata: embedded === undefined ? undefined : decodeTokenMetadata(embedded),
    transferRestrictions: [...extensions.keys()].flatMap((type) => {
      const restriction = RESTRICTING_EXTENSIONS.get(type);
      return restriction === undefined ? [] : [restriction];
    }),
    tokenAccountSize:
      program === TOKEN_PROGRAM
        ? ACCOUNT_SIZE
        : [...extensions.keys()].reduce(
            (size, type) =>
              size +
              (ACCOUNT_EXTENSION_LENGTHS.has(type) ? 4 + (ACCOUNT_EXTENSION_LENGTHS.get(type) ?? 0) : 0),
            TOKEN_2022_ACCOUNT_SIZE,
          ),
  };
}

/** Token-2022 TLV entries: u16 type, u16 length, value; type 0 (uninitialized) ends the list. */
function readExtensions(tlv: Uint8Array): Map<number, Uint8Array> {
  const found = new Map<number, Uint8Array>();
  const view = new DataView(tlv.buffer, tlv.byteOffset, tlv.byteLength);
  let at = 0;
  while (at + 4 <= tlv.length) {
    const type = view.getUint16(at, true);
    const length = view.getUint16(at + 2, true);
    if (type === 0 || at + 4 + length > tlv.length) break;
    found.set(type, tlv.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return found;
}

/** spl-token-metadata-interface TokenMetadata: update authority, mint, then Borsh name, symbol, uri. */
export function decodeTokenMetadata(value: Uint8Array): TokenMetadata | undefined {
  const reader = new BorshReader(value, 64);
  const name = reader.string();
  const symbol = reader.string();
  const uri = reader.string();
  if (name === undefined || symbol === undefined || uri === undefined) return undefined;
  return { name, symbol, uri };
}

/** Reads Borsh strings (u32 little-endian length, UTF-8 bytes); undefined once the data runs out. */
export class BorshReader {
  constructor(
    private readonly data: Uint8Array,
    private at = 0,
  ) {}

  string(): string | undefined {
    if (this.at + 4 > this.data.length) return undefined;
    const length = new DataView(this.data.buffer, this.data.byteOffset + this.at, 4).getUint32(0, true);
    const start = this.at + 4;
    if (start + length > this.data.length) return undefined;
    this.at = start + length;
    return Buffer.from(this.data.subarray(start, start + length)).toString('utf8');
  }
}

function optionalKey(tag: number, key: Uint8Array): string | null {
  return tag === 1 ? base58.decode(key) : null;
}

/** Token-2022's OptionalNonZeroPubkey: all zeroes means none. */
function nonZeroKey(key: Uint8Array): string | null {
  return key.every((b) => b === 0) ? null : base58.decode(key);
}
