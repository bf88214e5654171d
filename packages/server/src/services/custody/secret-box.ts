import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const MASTER_KEY_BYTES = 32;

/**
 * Seals custodial secrets with AES-256-GCM under a key derived from the master key. Each sealed value
 * is bound to a context (the wallet's address) as associated data, so a sealed secret copied onto
 * another wallet's row fails to open instead of signing for the wrong wallet.
 * Format: `v1:` + base64(iv ‖ ciphertext ‖ tag).
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(masterKey: Uint8Array) {
    if (masterKey.length !== MASTER_KEY_BYTES)
      throw new Error(`the master key must be ${MASTER_KEY_BYTES} bytes`);
    this.key = deriveKey(masterKey, 'gate402 wallet secrets v1');
  }

  seal(plaintext: Uint8Array, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return `${VERSION}:${Buffer.concat([iv, ciphertext, cipher.getAuthTag()]).toString('base64')}`;
  }

  /** Throws when the value was not sealed by this key for this context, or was altered. */
  open(sealed: string, context: string): Uint8Array {
    const [version, body] = sealed.split(':', 2);
    if (version !== VERSION || body === undefined) throw new Error('unknown sealed-secret format');
    const bytes = Buffer.from(body, 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    return new Uint8Array(
      Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]),
    );
  }
}

/** Separate keys for separate purposes, all from the one master key the operator keeps. */
export function deriveKey(masterKey: Uint8Array, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), purpose, 32));
}
