import { decodeBase58 } from '../../domain/base58.ts';

/**
 * The one transaction shape gate402 builds on Solana — a native SOL transfer with its compute-unit
 * limit and price, an optional read-only reference key on the transfer and an optional memo — encoded
 * by hand as a v0 transaction with its one (fee payer's) signature slot empty. @solana/kit's general
 * message compiler and codecs cost more than everything else in a send; this shape needs none of
 * them. transfer-transaction.test.ts checks the bytes against kit's for every variant, so the two
 * cannot drift apart.
 */
export interface TransferShape {
  readonly from: string;
  readonly to: string;
  readonly reference?: string | undefined;
  readonly lamports: bigint;
  /** Base58, 32 bytes. */
  readonly blockhash: string;
  readonly computeUnitLimit: number;
  /** Micro-lamports per compute unit; 0 leaves the price instruction out. */
  readonly computeUnitPrice: bigint;
  readonly memo?: string | undefined;
  readonly memoProgram: string;
}

const SYSTEM_PROGRAM = '11111111111111111111111111111111';
const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
const SET_COMPUTE_UNIT_LIMIT = 2;
const SET_COMPUTE_UNIT_PRICE = 3;
const SYSTEM_TRANSFER = 2;
const VERSION_0 = 0x80;
const SIGNATURE_BYTES = 64;
/** kit orders the read-only keys by this collation of their base58 text; the same order keeps the same bytes. */
const addressOrder = new Intl.Collator('en', {
  caseFirst: 'lower',
  ignorePunctuation: false,
  localeMatcher: 'best fit',
  numeric: false,
  sensitivity: 'variant',
  usage: 'sort',
}).compare;

/**
 * The unsigned wire transaction; undefined for inputs outside the shape (a key that is not 32 bytes of
 * base58, or one key in two roles), which the caller builds the general way.
 */
export function encodeTransferTransaction(shape: TransferShape): Uint8Array | undefined {
  const memo = shape.memo === undefined ? undefined : Buffer.from(shape.memo, 'utf8');
  const readonly = [
    SYSTEM_PROGRAM,
    COMPUTE_BUDGET_PROGRAM,
    ...(memo === undefined ? [] : [shape.memoProgram]),
    ...(shape.reference === undefined ? [] : [shape.reference]),
  ].sort(addressOrder);
  // Fee payer (writable signer), recipient (writable), then the read-only keys: kit's order.
  const keys = [shape.from, shape.to, ...readonly];
  if (new Set(keys).size !== keys.length) return undefined;
  const keyBytes = keys.map(decodeKey);
  const blockhash = decodeKey(shape.blockhash);
  if (blockhash === undefined || keyBytes.some((k) => k === undefined)) return undefined;
  const index = (key: string) => keys.indexOf(key);

  const instructions: Uint8Array[] = [
    instruction(index(COMPUTE_BUDGET_PROGRAM), [], computeUnitLimitData(shape.computeUnitLimit)),
    ...(shape.computeUnitPrice > 0n
      ? [instruction(index(COMPUTE_BUDGET_PROGRAM), [], computeUnitPriceData(shape.computeUnitPrice))]
      : []),
    instruction(
      index(SYSTEM_PROGRAM),
      [0, 1, ...(shape.reference === undefined ? [] : [index(shape.reference)])],
      transferData(shape.lamports),
    ),
    ...(memo === undefined ? [] : [instruction(index(shape.memoProgram), [], memo)]),
  ];
  const wire = Buffer.concat([
    compactU16(1),
    new Uint8Array(SIGNATURE_BYTES),
    Uint8Array.of(VERSION_0, 1, 0, readonly.length),
    compactU16(keys.length),
    ...(keyBytes as Uint8Array[]),
    blockhash,
    compactU16(instructions.length),
    ...instructions,
    // No address lookup tables.
    compactU16(0),
  ]);
  return new Uint8Array(wire.buffer, wire.byteOffset, wire.byteLength);
}

/**
 * The message of a wire transaction that has exactly one signature slot, the fee payer's, and that
 * fee payer's key; undefined for any other transaction.
 */
export function singleSignerMessage(
  wire: Uint8Array,
): { message: Uint8Array; signer: Uint8Array } | undefined {
  if (wire[0] !== 1) return undefined;
  const message = wire.subarray(1 + SIGNATURE_BYTES);
  // A versioned message starts with its version byte; the header's first byte counts the signers.
  const headerAt = (message[0] ?? 0) & VERSION_0 ? 1 : 0;
  if (message[headerAt] !== 1) return undefined;
  const countAt = headerAt + 3;
  // The key count is one byte while below 128; the fee payer's key comes first.
  if ((message[countAt] ?? VERSION_0) & VERSION_0) return undefined;
  const keysAt = countAt + 1;
  if (message.length < keysAt + 32) return undefined;
  return { message, signer: message.subarray(keysAt, keysAt + 32) };
}

function decodeKey(text: string): Uint8Array | undefined {
  const bytes = decodeBase58(text);
  return bytes?.length === 32 ? bytes : undefined;
}

function instruction(program: number, accounts: readonly number[], data: Uint8Array): Uint8Array {
  return Buffer.concat([
    Uint8Array.of(program),
    compactU16(accounts.length),
    Uint8Array.from(accounts),
    compactU16(data.length),
    data,
  ]);
}

function computeUnitLimitData(units: number): Uint8Array {
  const data = Buffer.alloc(5);
  data.writeUInt8(SET_COMPUTE_UNIT_LIMIT, 0);
  data.writeUInt32LE(units, 1);
  return data;
}

function computeUnitPriceData(microLamports: bigint): Uint8Array {
  const data = Buffer.alloc(9);
  data.writeUInt8(SET_COMPUTE_UNIT_PRICE, 0);
  data.writeBigUInt64LE(microLamports, 1);
  return data;
}

function transferData(lamports: bigint): Uint8Array {
  const data = Buffer.alloc(12);
  data.writeUInt32LE(SYSTEM_TRANSFER, 0);
  data.writeBigUInt64LE(lamports, 4);
  return data;
}

/** Solana's "shortvec" length: 7 bits per byte, low bits first. */
function compactU16(value: number): Uint8Array {
  const bytes: number[] = [];
  let rest = value;
  do {
    let byte = rest & 0x7f;
    rest >>= 7;
    if (rest > 0) byte |= 0x80;
    bytes.push(byte);
  } while (rest > 0);
  return Uint8Array.from(bytes);
}
