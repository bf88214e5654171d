const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const INDEX = new Map([...ALPHABET].map((c, i) => [c, i]));

/** Decodes base58 (Bitcoin alphabet, as Solana uses), or undefined for text that is not base58. */
export function decodeBase58(text: string): Uint8Array | undefined {
  // Bytes, least significant first, updated digit by digit (no bigint: keys and signatures stay cheap).
  const bytes: number[] = [];
  for (const char of text) {
    let carry = INDEX.get(char);
    if (carry === undefined) return undefined;
    for (let i = 0; i < bytes.length; i++) {
      carry += (bytes[i] ?? 0) * 58;
      bytes[i] = carry & 0xff;
      carry >>= 8;
    }
    while (carry > 0) {
      bytes.push(carry & 0xff);
      carry >>= 8;
    }
  }
  // Each leading '1' stands for a leading zero byte.
  for (const char of text) {
    if (char !== '1') break;
    bytes.push(0);
  }
  return Uint8Array.from(bytes.reverse());
}

/** Encodes bytes as base58 (Bitcoin alphabet): a signature's or a key's text form on Solana. */
export function encodeBase58(bytes: Uint8Array): string {
  // Base-58 digits, least significant first, updated byte by byte (no bigint: 64 bytes stay cheap).
  const digits: number[] = [];
  for (const byte of bytes) {
    let carry = byte;
    for (let i = 0; i < digits.length; i++) {
      carry += (digits[i] ?? 0) << 8;
      digits[i] = carry % 58;
      carry = Math.floor(carry / 58);
    }
    while (carry > 0) {
      digits.push(carry % 58);
      carry = Math.floor(carry / 58);
    }
  }
  let text = '';
  // Each leading zero byte is a leading '1'.
  for (const byte of bytes) {
    if (byte !== 0) break;
    text += '1';
  }
  for (let i = digits.length - 1; i >= 0; i--) text += ALPHABET[digits[i] ?? 0];
  return text;
}
