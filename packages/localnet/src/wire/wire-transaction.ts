// Strict decoder for the Solana transaction wire format (legacy and v0).
// Every byte the RPC receives is decoded and sanitised here before LiteSVM sees it: LiteSVM's
// native decoder aborts the whole process on malformed input, so nothing unchecked may reach it.

/** Largest transaction a validator accepts (one UDP packet payload, PACKET_DATA_SIZE). */
export const MAX_TRANSACTION_BYTES = 1232;

export interface CompiledInstruction {
  readonly programIdIndex: number;
  readonly accounts: Uint8Array;
  readonly data: Uint8Array;
}

export interface AddressTableLookup {
  readonly accountKey: Uint8Array;
  readonly writableIndexes: Uint8Array;
  readonly readonlyIndexes: Uint8Array;
}

export interface MessageHeader {
  readonly numRequiredSignatures: number;
  readonly numReadonlySignedAccounts: number;
  readonly numReadonlyUnsignedAccounts: number;
}

export interface WireTransaction {
  /** The transaction's own bytes (trailing bytes after it are dropped, as Agave does). */
  readonly bytes: Uint8Array;
  readonly signatures: readonly Uint8Array[];
  readonly version: 'legacy' | 0;
  readonly header: MessageHeader;
  readonly staticKeys: readonly Uint8Array[];
  readonly recentBlockhash: Uint8Array;
  readonly instructions: readonly CompiledInstruction[];
  readonly lookups: readonly AddressTableLookup[];
}

/** The bytes are not a transaction (Agave: "failed to deserialize …"). */
export class WireDecodeError extends Error {
  override readonly name = 'WireDecodeError';
}

/** The bytes decode but break a structural rule; `reason` is the Agave `TransactionError` name. */
export class WireSanitizeError extends Error {
  override readonly name = 'WireSanitizeError';
  constructor(readonly reason: 'SanitizeFailure' | 'AccountLoadedTwice') {
    super(reason);
  }
}

class Reader {
  offset = 0;
  constructor(private readonly bytes: Uint8Array) {}

  take(length: number): Uint8Array {
    if (this.offset + length > this.bytes.length)
      throw new WireDecodeError('io error: failed to fill whole buffer');
    const out = this.bytes.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  u8(): number {
    return this.take(1)[0] as number;
  }

  /** compact-u16 ("short vec" length): at most 3 bytes, canonical, no overflow. */
  shortVec(): number {
    let value = 0;
    for (let i = 0; i < 3; i++) {
      const byte = this.u8();
      value |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) {
        if (i > 0 && byte === 0) throw new WireDecodeError('invalid compact-u16: alias encoding');
        if (value > 0xffff) throw new WireDecodeError('invalid compact-u16: overflow');
        return value;
      }
      if (i === 2) throw new WireDecodeError('invalid compact-u16: too long');
    }
    throw new WireDecodeError('invalid compact-u16');
  }

  keys(count: number): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (let i = 0; i < count; i++) out.push(this.take(32));
    return out;
  }
}

export function decodeWireTransaction(input: Uint8Array): WireTransaction {
  const r = new Reader(input);
  const signatureCount = r.shortVec();
  const signatures: Uint8Array[] = [];
  for (let i = 0; i < signatureCount; i++) signatures.push(r.take(64));

  const first = r.u8();
  let version: 'legacy' | 0 = 'legacy';
  let numRequiredSignatures = first;
  if (first & 0x80) {
    if ((first & 0x7f) !== 0) throw new WireDecodeError(`invalid value: message version ${first & 0x7f}`);
    version = 0;
    numRequiredSignatures = r.u8();
  }
  const header: MessageHeader = {
    numRequiredSignatures,
    numReadonlySignedAccounts: r.u8(),
    numReadonlyUnsignedAccounts: r.u8(),
  };
  const staticKeys = r.keys(r.shortVec());
  const recentBlockhash = r.take(32);
  const instructionCount = r.shortVec();
  const instructions: CompiledInstruction[] = [];
  for (let i = 0; i < instructionCount; i++) {
    const programIdIndex = r.u8();
    const accounts = r.take(r.shortVec());
    const data = r.take(r.shortVec());
    instructions.push({ programIdIndex, accounts, data });
  }
  const lookups: AddressTableLookup[] = [];
  if (version === 0) {
    const lookupCount = r.shortVec();
    for (let i = 0; i < lookupCount; i++) {
      const accountKey = r.take(32);
      const writableIndexes = r.take(r.shortVec());
      const readonlyIndexes = r.take(r.shortVec());
      lookups.push({ accountKey, writableIndexes, readonlyIndexes });
    }
  }
  // Copy so the caller may keep the transaction after the request buffer is reused.
  const bytes = input.slice(0, r.offset);
  const tx: WireTransaction = {
    bytes,
    signatures,
    version,
    header,
    staticKeys,
    recentBlockhash,
    instructions,
    lookups,
  };
  sanitize(tx);
  return tx;
}

/** The checks of Agave's `VersionedTransaction::sanitize` and `SanitizedMessage::try_new`. */
function sanitize(tx: WireTransaction): void {
  const { header, staticKeys, instructions, lookups, signatures } = tx;
  const fail = () => {
    throw new WireSanitizeError('SanitizeFailure');
  };
  if (signatures.length !== header.numRequiredSignatures) fail();
  if (signatures.length > staticKeys.length) fail();
  if (header.numRequiredSignatures + header.numReadonlyUnsignedAccounts > staticKeys.length) fail();
  if (header.numReadonlySignedAccounts >= header.numRequiredSignatures) fail();
  let lookupKeys = 0;
  for (const lookup of lookups) {
    const count = lookup.writableIndexes.length + lookup.readonlyIndexes.length;
    if (count === 0) fail();
    lookupKeys += count;
  }
  const totalKeys = staticKeys.length + lookupKeys;
  if (totalKeys > 256) fail();
  for (const ix of instructions) {
    if (ix.programIdIndex === 0 || ix.programIdIndex >= staticKeys.length) fail();
    for (const index of ix.accounts) if (index >= totalKeys) fail();
  }
  const seen = new Set<string>();
  for (const key of staticKeys) {
    const text = Buffer.from(key.buffer, key.byteOffset, 32).toString('latin1');
    if (seen.has(text)) throw new WireSanitizeError('AccountLoadedTwice');
    seen.add(text);
  }
}

/** Which static keys the message marks writable / signer (lookup keys are handled by the caller). */
export function isStaticWritable(tx: WireTransaction, index: number): boolean {
  const { numRequiredSignatures, numReadonlySignedAccounts, numReadonlyUnsignedAccounts } = tx.header;
  if (index < numRequiredSignatures) return index < numRequiredSignatures - numReadonlySignedAccounts;
  return index < tx.staticKeys.length - numReadonlyUnsignedAccounts;
}
