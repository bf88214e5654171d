import { generateKeyPairSync } from 'node:crypto';
import { getAddressDecoder } from '@solana/kit';

/** A new Solana key pair: ed25519 from node:crypto; the secret in Solana's 64-byte form (seed ‖ public key). */
export function generateSolanaKeypair(): { address: string; secretKey: Uint8Array } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return { address: getAddressDecoder().decode(pub), secretKey: new Uint8Array(Buffer.concat([seed, pub])) };
}
