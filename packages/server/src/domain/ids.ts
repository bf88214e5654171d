import { randomBytes } from 'node:crypto';

/** Prefixes of public identifiers. An id is `<prefix>_<26 chars>`, e.g. `pay_01JD0Q3ZK8M4F6X3V5N7R9T2AB`. */
export const ID_PREFIXES = ['acct', 'key', 'pay', 'evt', 'wal', 'whk', 'dlv', 'req', 'user'] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

let lastTime = 0;
let lastRandom = new Uint8Array(10);

/**
 * A new id, time-sortable: 48 bits of milliseconds then 80 random bits, in Crockford base32 (ULID layout).
 * Within one millisecond the random part is incremented, so ids made by one process sort in creation order.
 */
export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  if (now <= lastTime) {
    incrementInPlace(lastRandom);
    now = lastTime;
  } else {
    lastTime = now;
    lastRandom = new Uint8Array(randomBytes(10));
  }
  return `${prefix}_${encodeTime(now)}${encodeRandom(lastRandom)}`;
}

function encodeTime(ms: number): string {
  let out = '';
  let rest = ms;
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD.charAt(rest % 32) + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

function encodeRandom(bytes: Uint8Array): string {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  let out = '';
  for (let i = 0; i < 16; i++) {
    out = CROCKFORD.charAt(Number(value & 31n)) + out;
    value >>= 5n;
  }
  return out;
}

function incrementInPlace(bytes: Uint8Array): void {
  for (let i = bytes.length - 1; i >= 0; i--) {
    const next = (bytes[i] ?? 0) + 1;
    bytes[i] = next & 0xff;
    if (next <= 0xff) return;
  }
}
