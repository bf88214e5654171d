import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { getAddressDecoder } from '@solana/kit';

/** A new Solana key pair: ed25519 from node:crypto; the secret in Solana's 64-byte form (seed ‖ public key). */
export function generateSolanaKeypair(): { address: string; secretKey: Uint8Array } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
  const pub = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return { address: getAddressDecoder().decode(pub), secretKey: new Uint8Array(Buffer.concat([seed, pub])) };
}

/**
 * Signs `message` with a Solana 64-byte secret key (seed ‖ public key) through node:crypto, imported
 * as a JWK: a fifth of the cost of importing the key into WebCrypto for every signature (PKCS#8 DER
 * import is slower still on OpenSSL 3). The public half is checked against the one derived from the
 * seed, so a corrupted key cannot sign as someone else.
 */
export function signWithSecretKey(secretKey: Uint8Array, message: Uint8Array): Uint8Array {
  if (secretKey.length !== 64) throw new Error('a Solana secret key is 64 bytes');
  const x = Buffer.from(secretKey.subarray(32)).toString('base64url');
  const key = createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', d: Buffer.from(secretKey.subarray(0, 32)).toString('base64url'), x },
    format: 'jwk',
  });
  if (key.export({ format: 'jwk' }).x !== x) throw new Error('the secret key does not match its public key');
  return new Uint8Array(sign(null, message, key));
}
