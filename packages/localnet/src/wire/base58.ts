// Base58 (Bitcoin alphabet), the text form of Solana addresses, signatures and blockhashes.
// Hand-rolled because it sits on the hot path of every transaction (signatures and account keys
// are encoded for the ledger and the indexes) and the generic codecs go through BigInt.

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const DIGIT_OF = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DIGIT_OF[ALPHABET.charCodeAt(i)] = i;

// Digits are accumulated in limbs of 58^5 and bytes consumed two at a time, so every
// intermediate (limb × 65536 + carry < 2^46) stays exact in a double: ~10× fewer steps than the
// digit-by-digit schoolbook method.
const LIMB = 58 ** 5;
const CODES = Uint8Array.from(ALPHABET, (c) => c.charCodeAt(0));
// Scratch space reused across calls (encoding is synchronous); grown for unusually long inputs.
let scratchLimbs = new Float64Array(64);
let scratchCodes = Buffer.alloc(256);

export function encodeBase58(bytes: Uint8Array): string {
  const length = bytes.length;
  let zeros = 0;
  while (zeros < length && bytes[zeros] === 0) zeros++;
  const limbCount = Math.ceil(((length - zeros) * 1.37) / 5) + 1;
  if (scratchLimbs.length < limbCount) scratchLimbs = new Float64Array(limbCount);
  const limbs = scratchLimbs;
  let used = 0;
  let i = zeros;
  let scale = 256;
  let value = (length - zeros) % 2 === 1 ? (bytes[i++] as number) : -1;
  for (;;) {
    if (value >= 0) {
      let carry = value;
      for (let j = 0; j < used; j++) {
        carry += (limbs[j] as number) * scale;
        const q = Math.floor(carry / LIMB);
        limbs[j] = carry - q * LIMB;
        carry = q;
      }
      while (carry > 0) {
        const q = Math.floor(carry / LIMB);
        limbs[used++] = carry - q * LIMB;
        carry = q;
      }
    }
    if (i >= length) break;
    value = ((bytes[i] as number) << 8) | (bytes[i + 1] as number);
    scale = 65536;
    i += 2;
  }
  if (scratchCodes.length < used * 5) scratchCodes = Buffer.alloc(used * 5);
  const codes = scratchCodes;
  const end = used * 5;
  let at = end;
  for (let j = 0; j < used; j++) {
    let limb = limbs[j] as number;
    for (let d = 0; d < 5; d++) {
      const q = Math.floor(limb / 58);
      codes[--at] = CODES[limb - q * 58] as number;
      limb = q;
    }
  }
  // The top limb was padded with zero digits ('1'); drop them, then put back the leading zeros.
  let start = at;
  while (start < end && codes[start] === 49) start++;
  const body = codes.toString('latin1', start, end);
  return zeros === 0 ? body : '1'.repeat(zeros) + body;
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
