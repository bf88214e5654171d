import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  sign,
  timingSafeEqual,
  verify,
} from 'node:crypto';
import { deriveKey } from '../../custody/secret-box.ts';

/**
 * The gate402 payment proof: the gateway's signed attestation of a payment it made or built.
 *
 * Wire form: `0x` + hex( 0x01 ‖ payload ‖ ed25519 signature (64 bytes) ), where payload is the UTF-8
 * JSON of {@link ProofClaims} and the signature covers `gate402-proof:` ‖ payload. The public keys are
 * served at GET /.well-known/gate402.json so that any gate402 instance can check a proof. A proof only
 * binds facts; receive still checks every one of them on chain.
 */
export interface ProofClaims {
  readonly v: 1;
  /** Key id of the signing key. */
  readonly kid: string;
  /** The payer's paymentId at the issuing gateway. */
  readonly pid: string;
  /** CAIP-2 network. */
  readonly net: string;
  /** Transaction signature (Lightning mode); absent for a local-mode proof issued before signing. */
  readonly sig?: string;
  /** Reference address that finds a local-mode transaction on chain. */
  readonly ref?: string;
  readonly from: string;
  readonly to: string;
  /** Atomic units of the asset, decimal text. */
  readonly amt: string;
  /** The token paid (mint or contract address); absent: the network's native currency. */
  readonly ast?: string;
  readonly res?: string;
  /** Issued at, Unix ms. */
  readonly iat: number;
}

export type ProofCheck =
  | { readonly valid: true; readonly claims: ProofClaims }
  | { readonly valid: false; readonly reason: 'malformed' | 'unknown_issuer' | 'bad_signature' };

const VERSION = 0x01;
const SIGNATURE_BYTES = 64;
const DOMAIN = Buffer.from('gate402-proof:', 'utf8');
/** Bigger than any real proof; refuses junk before parsing it. */
export const MAX_PROOF_HEX_LENGTH = 4096;
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export interface PublishedKey {
  readonly kid: string;
  readonly alg: 'Ed25519';
  /** Raw 32-byte public key, base64url. */
  readonly publicKey: string;
}

export class PaymentProofs {
  private readonly privateKey: KeyObject;
  private readonly ownKey: PublishedKey;
  /** Public keys by kid, own first; KeyObjects are cached because creating one costs more than verifying. */
  private readonly trusted = new Map<string, KeyObject>();

  /**
   * @param masterKey the attestation key is derived from it, so every instance sharing the master key
   *   signs and checks with the same key.
   * @param trustedKeys public keys of other gate402 instances whose proofs this one accepts.
   */
  constructor(masterKey: Uint8Array, trustedKeys: readonly PublishedKey[] = []) {
    const seed = deriveKey(masterKey, 'gate402 proof attestation v1');
    this.privateKey = createPrivateKey({
      key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]),
      format: 'der',
      type: 'pkcs8',
    });
    const publicKey = createPublicKey(this.privateKey);
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
    this.ownKey = { kid: keyId(raw), alg: 'Ed25519', publicKey: raw.toString('base64url') };
    this.trusted.set(this.ownKey.kid, publicKey);
    for (const key of trustedKeys)
      this.trusted.set(key.kid, publicKeyFromRaw(Buffer.from(key.publicKey, 'base64url')));
  }

  /** The keys to publish: this instance's own. */
  publishedKeys(): PublishedKey[] {
    return [this.ownKey];
  }

  issue(claims: Omit<ProofClaims, 'v' | 'kid'>): string {
    const payload = Buffer.from(JSON.stringify({ v: 1, kid: this.ownKey.kid, ...claims }), 'utf8');
    const signature = sign(null, Buffer.concat([DOMAIN, payload]), this.privateKey);
    return `0x${Buffer.concat([Buffer.of(VERSION), payload, signature]).toString('hex')}`;
  }

  /**
   * Checks a proof's attestation. The signature work runs on libuv's thread pool, not the event loop:
   * every seller's receive checks a proof, and an Ed25519 operation is the largest piece of CPU work in
   * one, which other requests would otherwise wait behind.
   */
  async check(proof: string): Promise<ProofCheck> {
    if (!/^0x[0-9a-fA-F]+$/.test(proof) || proof.length > MAX_PROOF_HEX_LENGTH || proof.length % 2 !== 0) {
      return { valid: false, reason: 'malformed' };
    }
    const bytes = Buffer.from(proof.slice(2), 'hex');
    if (bytes.length <= 1 + SIGNATURE_BYTES || bytes[0] !== VERSION)
      return { valid: false, reason: 'malformed' };
    const payload = bytes.subarray(1, bytes.length - SIGNATURE_BYTES);
    const claims = parseClaims(payload);
    if (claims === undefined) return { valid: false, reason: 'malformed' };
    const key = this.trusted.get(claims.kid);
    if (key === undefined) return { valid: false, reason: 'unknown_issuer' };
    const message = Buffer.concat([DOMAIN, payload]);
    const signature = bytes.subarray(bytes.length - SIGNATURE_BYTES);
    const ok =
      claims.kid === this.ownKey.kid
        ? await this.isOwnSignature(message, signature)
        : await new Promise<boolean>((resolve, reject) =>
            verify(null, message, key, signature, (error, valid) => (error ? reject(error) : resolve(valid))),
          );
    return ok ? { valid: true, claims } : { valid: false, reason: 'bad_signature' };
  }

  /**
   * Ed25519 signing is deterministic (RFC 8032): this key's signature of a message is the only one it
   * ever makes, so a proof this instance (or another sharing its master key) issued is checked by signing
   * the message again and comparing, in constant time. Signing costs under a third of verifying, and
   * every seller's receive checks a proof; the comparison accepts exactly what `issue` produced, not
   * even another encoding of the same signature.
   */
  private isOwnSignature(message: Buffer, signature: Buffer): Promise<boolean> {
    return new Promise((resolve, reject) =>
      sign(null, message, this.privateKey, (error, expected) =>
        error ? reject(error) : resolve(timingSafeEqual(expected, signature)),
      ),
    );
  }
}

function parseClaims(payload: Buffer): ProofClaims | undefined {
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const c = value as Record<string, unknown>;
  const text = (k: string) =>
    typeof c[k] === 'string' && (c[k] as string).length > 0 && (c[k] as string).length <= 200;
  const optionalText = (k: string) => c[k] === undefined || text(k);
  if (
    c.v !== 1 ||
    !text('kid') ||
    !text('pid') ||
    !text('net') ||
    !text('from') ||
    !text('to') ||
    typeof c.amt !== 'string' ||
    !/^\d{1,78}$/.test(c.amt) ||
    typeof c.iat !== 'number' ||
    !Number.isSafeInteger(c.iat) ||
    !optionalText('sig') ||
    !optionalText('ref') ||
    (c.res !== undefined && (typeof c.res !== 'string' || c.res.length > 2048)) ||
    (c.sig === undefined && c.ref === undefined)
  ) {
    return undefined;
  }
  return c as unknown as ProofClaims;
}

function keyId(rawPublicKey: Buffer): string {
  return createHash('sha256').update(rawPublicKey).digest('hex').slice(0, 16);
}

function publicKeyFromRaw(raw: Buffer): KeyObject {
  if (raw.length !== 32) throw new Error('an Ed25519 public key is 32 bytes');
  return createPublicKey({
    key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]),
    format: 'der',
    type: 'spki',
  });
}
