import type { Address, CompiledTransactionMessage, Transaction } from '@solana/kit';
import { encodeBase58 } from '../../domain/base58.ts';

/** Legacy and v0 messages: what x402 buyers build (v1 messages are refused as undecodable). */
export type PaymentMessage = Extract<CompiledTransactionMessage, { version: 'legacy' | 0 }>;

export interface DecodedPayment {
  readonly transaction: Transaction;
  readonly message: PaymentMessage;
}

const VERSION_FLAG = 0x80;
const SIGNATURE_BYTES = 64;
const ADDRESS_BYTES = 32;

/**
 * A signatures-first wire transaction with a legacy or v0 message, read into the same objects as
 * @solana/kit's getTransactionDecoder and getCompiledTransactionMessageDecoder (a test holds them equal),
 * or undefined where those throw or the message is of another version. Why not kit's: its decoders
 * base58-encode every address twice, with bigint arithmetic, and that was most of the CPU a
 * facilitator verification cost the event loop. Like kit's, bytes after the message's last field are
 * not looked at (the chain reads the message itself and refuses what it cannot parse).
 */
export function decodePaymentTransaction(bytes: Uint8Array): DecodedPayment | undefined {
  const reader = new Reader(bytes);
  // A signatures-first envelope starts with the signature count as one short-u16 byte below 0x80.
  const signatureCount = reader.u8();
  if (signatureCount === undefined || (signatureCount & VERSION_FLAG) !== 0) return undefined;
  const signatures: Uint8Array[] = [];
  for (let i = 0; i < signatureCount; i++) {
    const signature = reader.bytes(SIGNATURE_BYTES);
    if (signature === undefined) return undefined;
    signatures.push(signature);
  }
  const messageBytes = bytes.subarray(reader.offset);
  const message = decodeMessage(new Reader(messageBytes));
  if (message === undefined) return undefined;
  const signers = message.staticAccounts.slice(0, message.header.numSignerAccounts);
  if (signers.length !== signatures.length) return undefined;
  // As kit's makeSignaturesMap: by signer address, in order, an all-zero signature as null.
  const signatureMap: Record<string, Uint8Array | null> = {};
  signers.forEach((signer, i) => {
    const signature = signatures[i] as Uint8Array;
    signatureMap[signer] = signature.every((b) => b === 0) ? null : signature;
  });
  return {
    transaction: {
      messageBytes: messageBytes as unknown as Transaction['messageBytes'],
      signatures: Object.freeze(signatureMap) as Transaction['signatures'],
    },
    message,
  };
}

function decodeMessage(reader: Reader): PaymentMessage | undefined {
  const first = reader.peek();
  if (first === undefined) return undefined;
  let version: 'legacy' | 0 = 'legacy';
  if ((first & VERSION_FLAG) !== 0) {
    // Only v0 here: v1 (and kit's refusal of anything later) is not a payment this scheme reads.
    if ((first ^ VERSION_FLAG) !== 0) return undefined;
    version = 0;
    reader.u8();
  }
  const numSignerAccounts = reader.u8();
  const numReadonlySignerAccounts = reader.u8();
  const numReadonlyNonSignerAccounts = reader.u8();
  if (
    numSignerAccounts === undefined ||
    numReadonlySignerAccounts === undefined ||
    numReadonlyNonSignerAccounts === undefined
  )
    return undefined;
  const accountCount = reader.shortU16();
  if (accountCount === undefined) return undefined;
  const staticAccounts: Address[] = [];
  for (let i = 0; i < accountCount; i++) {
    const account = reader.bytes(ADDRESS_BYTES);
    if (account === undefined) return undefined;
    staticAccounts.push(encodeBase58(account) as Address);
  }
  const blockhash = reader.bytes(ADDRESS_BYTES);
  const instructionCount = reader.shortU16();
  if (blockhash === undefined || instructionCount === undefined) return undefined;
  const instructions: PaymentMessage['instructions'][number][] = [];
  for (let i = 0; i < instructionCount; i++) {
    const programAddressIndex = reader.u8();
    const accountIndices = reader.u8Array();
    const dataLength = reader.shortU16();
    const data = dataLength === undefined ? undefined : reader.bytes(dataLength);
    if (programAddressIndex === undefined || accountIndices === undefined || data === undefined)
      return undefined;
    // As kit: empty account lists and data are left out.
    instructions.push({
      programAddressIndex,
      ...(accountIndices.length > 0 ? { accountIndices } : {}),
      ...(data.byteLength > 0 ? { data } : {}),
    } as PaymentMessage['instructions'][number]);
  }
  const header = { numSignerAccounts, numReadonlySignerAccounts, numReadonlyNonSignerAccounts };
  const lifetimeToken = encodeBase58(blockhash);
  if (version === 'legacy') {
    return { version, header, staticAccounts, lifetimeToken, instructions } as PaymentMessage;
  }
  const lookupCount = reader.shortU16();
  if (lookupCount === undefined) return undefined;
  const addressTableLookups: {
    lookupTableAddress: Address;
    writableIndexes: number[];
    readonlyIndexes: number[];
  }[] = [];
  for (let i = 0; i < lookupCount; i++) {
    const table = reader.bytes(ADDRESS_BYTES);
    const writableIndexes = reader.u8Array();
    const readonlyIndexes = reader.u8Array();
    if (table === undefined || writableIndexes === undefined || readonlyIndexes === undefined)
      return undefined;
    addressTableLookups.push({
      lookupTableAddress: encodeBase58(table) as Address,
      writableIndexes,
      readonlyIndexes,
    });
  }
  // As kit: no lookup tables, no field.
  return {
    version,
    header,
    staticAccounts,
    lifetimeToken,
    instructions,
    ...(addressTableLookups.length > 0 ? { addressTableLookups } : {}),
  } as PaymentMessage;
}

/** Reads forward through bytes; each read is undefined past the end. */
class Reader {
  offset = 0;
  constructor(private readonly source: Uint8Array) {}

  peek(): number | undefined {
    return this.source[this.offset];
  }

  u8(): number | undefined {
    if (this.offset >= this.source.length) return undefined;
    return this.source[this.offset++];
  }

  /** Solana's compact-u16: 7 bits a byte, at most three bytes and 65,535, as kit's getShortU16Decoder. */
  shortU16(): number | undefined {
    let value = 0;
    for (let i = 0; i < 3; i++) {
      const byte = this.u8();
      if (byte === undefined) return undefined;
      value |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) return value <= 0xffff ? value : undefined;
    }
    return undefined;
  }

  bytes(length: number): Uint8Array | undefined {
    if (this.offset + length > this.source.length) return undefined;
    const read = this.source.subarray(this.offset, this.offset + length);
    this.offset += length;
    return read;
  }

  /** A short-u16 count, then that many u8s. */
  u8Array(): number[] | undefined {
    const count = this.shortU16();
    const read = count === undefined ? undefined : this.bytes(count);
    return read === undefined ? undefined : Array.from(read);
  }
}
