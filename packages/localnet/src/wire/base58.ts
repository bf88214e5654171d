// Base58 (Bitcoin alphabet), the text form of Solana addresses, signatures and blockhashes.
// Hand-rolled because it sits on the hot path of every transaction (signatures and account keys
// are encoded for the ledger and the indexes) and the generic codecs go through BigInt.

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const DIGIT_OF = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DIGIT_OF[ALPHABET.charCodeAt(i)] = i;

export function encodeBase58(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  // log(256) / log(58) ≈ 1.366, so this many base-58 digits always suffice.
  const digits = new Uint8Array(Math.ceil((bytes.length - zeros) * 1.37) + 1);
  let length = 0;
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i] as number;
    let j = 0;
    for (; j < length || carry !== 0; j++) {
      carry += 256 * (digits[j] as number);
      digits[j] = carry % 58;
      carry = (carry / 58) | 0;
    }
    length = j;
  }
  let out = '1'.repeat(zeros);
  for (let i = length - 1; i >= 0; i--) out += ALPHABET[digits[i] as number];
  return out;
}

/** Decodes base58 text, or returns undefined when it holds a character outside the alphabet. */
export function decodeBase58(text: string): Uint8Array | undefined {
  let zeros = 0;
  while (zeros < text.length && text.charCodeAt(zeros) === 49 /* '1' */) zeros++;
  const bytes = new Uint8Array(Math.ceil((text.length - zeros) * 0.733) + 1);
  let length = 0;
  for (let i = zeros; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const digit = code < 128 ? (DIGIT_OF[code] as number) : -1;
    if (digit < 0) return undefined;
    let carry = digit;
    let j = 0;
    for (; j < length || carry !== 0; j++) {
      carry += 58 * (bytes[j] as number);
      bytes[j] = carry & 0xff;
      carry >>= 8;
    }
    length = j;
  }
  const out = new Uint8Array(zeros + length);
  for (let i = 0; i < length; i++) out[zeros + i] = bytes[length - 1 - i] as number;
  return out;
}

/** Decodes a base58 address or hash of exactly 32 bytes, or returns undefined. */
export function decodeBase58Key(text: string): Uint8Array | undefined {
  if (text.length < 32 || text.length > 44) return undefined;
  const bytes = decodeBase58(text);
  return bytes?.length === 32 ? bytes : undefined;
}
