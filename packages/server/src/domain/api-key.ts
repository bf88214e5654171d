import { hash, randomBytes } from 'node:crypto';

/**
 * API keys look like `g402_sk_<43 chars of base64url>`: a recognisable prefix (so secret scanners and
 * people can tell what leaked) and 256 bits of randomness. Only the SHA-256 of the whole key is stored;
 * with 256 random bits a slow password hash adds nothing, and SHA-256 keeps authentication cheap.
 */
export const API_KEY_PREFIX = 'g402_sk_';
const SECRET_BYTES = 32;
const API_KEY_SHAPE = /^g402_sk_[A-Za-z0-9_-]{43}$/;
/** How much of the key is kept in clear, to tell keys apart in lists: the prefix and 4 characters. */
const DISPLAY_LENGTH = API_KEY_PREFIX.length + 4;

export interface NewApiKey {
  /** The secret; shown to its owner once and never stored. */
  readonly key: string;
  readonly hash: Buffer;
  /** The start of the key, safe to display. */
  readonly displayPrefix: string;
}

export function generateApiKey(): NewApiKey {
  const key = API_KEY_PREFIX + randomBytes(SECRET_BYTES).toString('base64url');
  return { key, hash: hashApiKey(key), displayPrefix: key.slice(0, DISPLAY_LENGTH) };
}

/** True when the string has the shape of a gate402 key; says nothing about whether it exists. */
export function isApiKeyShape(value: string): boolean {
  return API_KEY_SHAPE.test(value);
}

/** SHA-256 of the key; the one-shot `hash` costs half of createHash's, and this runs on every request. */
export function hashApiKey(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

/** The same digest as hex, the form storage and the authentication cache index it by. */
export function hashApiKeyHex(key: string): string {
  return hash('sha256', key, 'hex');
}
