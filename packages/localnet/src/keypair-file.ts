// Operator keypairs (faucet, USDC mint authority) in solana-keygen's file format: a JSON array of
// the 64 bytes seed ‖ public key. Files are created with mode 0600: they hold private keys.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';

/** A fresh keypair in solana-keygen's 64-byte form. */
export function generateKeypairBytes(): Uint8Array {
  const jwk = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
  const seed = Buffer.from(jwk.d ?? '', 'base64url');
  const publicKey = Buffer.from(jwk.x ?? '', 'base64url');
  return new Uint8Array([...seed, ...publicKey]);
}

/** Reads the keypair at `path`, creating it first when absent; without a path, a fresh one in memory. */
export function loadOrCreateKeypair(path: string | undefined): Uint8Array {
  if (path === undefined) return generateKeypairBytes();
  try {
    const bytes = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    if (
      !Array.isArray(bytes) ||
      bytes.length !== 64 ||
      !bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256)
    ) {
      throw new Error(`${path} is not a 64-byte keypair file`);
    }
    return new Uint8Array(bytes as number[]);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const keypair = generateKeypairBytes();
  writeFileSync(path, JSON.stringify([...keypair]), { mode: 0o600, flag: 'wx' });
  return keypair;
}
