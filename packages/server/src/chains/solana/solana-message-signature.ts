import { createPublicKey, verify } from 'node:crypto';
import { decodeBase58 } from '../../domain/base58.ts';

/**
 * True when `signature` is the ed25519 signature of `message`'s bytes by the Solana address `address`:
 * what wallet-standard `signMessage` (Phantom, Solflare, Backpack, …) and @solana/kit's `signBytes`
 * produce. The signature is 64 bytes written in base58 (Solana's text form), base64 or hex; wallets
 * hand out raw bytes and each tool prints them its own way, so every spelling that decodes to 64 bytes
 * is tried — trying two readings of one string gives a forger nothing, ed25519 stands on its own.
 * Solana's off-chain message format (`solana sign-offchain-message`, a header before the text) is a
 * different message and does not verify.
 */
export function verifySolanaMessageSignature(address: string, message: string, signature: string): boolean {
  const publicKey = decodeBase58(address);
  if (publicKey?.length !== 32) return false;
  let key: ReturnType<typeof createPublicKey>;
  try {
    key = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey).toString('base64url') },
      format: 'jwk',
    });
  } catch {
    return false; // not a point on the curve: no key can sign for it
  }
  const bytes = Buffer.from(message, 'utf8');
  return signatureSpellings(signature.trim()).some((candidate) => {
    try {
      return verify(null, bytes, key, candidate);
    } catch {
      return false;
    }
  });
}

/** Every reading of `text` as 64 bytes: base58, hex (with or without 0x), base64 or base64url. */
function signatureSpellings(text: string): Uint8Array[] {
  const found: Uint8Array[] = [];
  const base58 = decodeBase58(text);
  if (base58?.length === 64) found.push(base58);
  const hex = text.startsWith('0x') ? text.slice(2) : text;
  if (/^[0-9a-fA-F]{128}$/.test(hex)) found.push(Buffer.from(hex, 'hex'));
  if (/^[A-Za-z0-9+/_-]{86}(==)?$/.test(text)) {
    const bytes = Buffer.from(text.replaceAll('-', '+').replaceAll('_', '/'), 'base64');
    if (bytes.length === 64) found.push(bytes);
  }
  return found;
}
