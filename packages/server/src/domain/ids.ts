import { randomFillSync } from 'node:crypto';

/** Prefixes of public identifiers. An id is `<prefix>_<26 chars>`, e.g. `pay_01JD0Q3ZK8M4F6X3V5N7R9T2AB`. */
export const ID_PREFIXES = ['acct', 'key', 'pay', 'evt', 'wal', 'whk', 'dlv', 'req', 'user'] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

const RANDOM_BYTES = 10;

let lastTime = 0;
const lastRandom = new Uint8Array(RANDOM_BYTES);

/** Random bytes drawn in bulk: one call to the CSPRNG per 409 ids rather than a new buffer per id. */
const pool = new Uint8Array(4_090);
let poolOffset = pool.length;

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
    if (poolOffset === pool.length) {
      randomFillSync(pool);
      poolOffset = 0;
    }
    lastRandom.set(pool.subarray(poolOffset, poolOffset + RANDOM_BYTES));
    poolOffset += RANDOM_BYTES;
  }
  return `${prefix}_${encodeTime(now)}${encode40(lastRandom, 0)}${encode40(lastRandom, 5)}`;
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

/** Eight characters for the 40 bits of bytes[at..at+5), big-endian: exact in a double, no BigInt. */
function encode40(bytes: Uint8Array, at: number): string {
  let rest = 0;
  for (let i = at; i < at + 5; i++) rest = rest * 256 + (bytes[i] ?? 0);
  let out = '';
  for (let i = 0; i < 8; i++) {
    out = CROCKFORD.charAt(rest % 32) + out;
    rest = Math.floor(rest / 32);
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
