// Builds and signs small legacy transactions for the localnet's own operator actions (faucet
// airdrops, USDC-like mints). Signing is synchronous (node:crypto ed25519), so these run inline.
import { createPrivateKey, type KeyObject, sign } from 'node:crypto';

export interface AccountMeta {
  readonly pubkey: Uint8Array;
  readonly signer: boolean;
  readonly writable: boolean;
}

export interface Instruction {
  readonly programId: Uint8Array;
  readonly accounts: readonly AccountMeta[];
  readonly data: Uint8Array;
}

// DER prefix of a PKCS#8 ed25519 private key; the 32-byte seed follows.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** A signer from a solana-keygen 64-byte keypair (seed ‖ public key). */
export class KeypairSigner {
  readonly publicKey: Uint8Array;
  private readonly key: KeyObject;

  constructor(keypair: Uint8Array) {
    this.publicKey = keypair.slice(32, 64);
    this.key = createPrivateKey({
      key: Buffer.concat([PKCS8_ED25519_PREFIX, keypair.subarray(0, 32)]),
      format: 'der',
      type: 'pkcs8',
    });
  }

  sign(message: Uint8Array): Uint8Array {
    return new Uint8Array(sign(null, message, this.key));
  }
}

function shortVec(length: number): number[] {
  const out: number[] = [];
  let rest = length;
  for (;;) {
    const byte = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

/** Compiles, signs (every signer must be in `signers`, the fee payer first) and serialises. */
export function buildLegacyTransaction(
  signers: readonly KeypairSigner[],
  instructions: readonly Instruction[],
  recentBlockhash: Uint8Array,
): Uint8Array {
  const payer = signers[0];
  if (!payer) throw new Error('a transaction needs a fee payer');
  const metas = new Map<string, { pubkey: Uint8Array; signer: boolean; writable: boolean }>();
  const add = (pubkey: Uint8Array, signer: boolean, writable: boolean) => {
    const id = Buffer.from(pubkey).toString('hex');
    const seen = metas.get(id);
    if (seen) {
      seen.signer ||= signer;
      seen.writable ||= writable;
    } else metas.set(id, { pubkey, signer, writable });
  };
  add(payer.publicKey, true, true);
  for (const ix of instructions) {
    for (const meta of ix.accounts) add(meta.pubkey, meta.signer, meta.writable);
  }
  for (const ix of instructions) add(ix.programId, false, false);
  // Agave's order: writable signers, read-only signers, writable others, read-only others.
  const rank = (m: { signer: boolean; writable: boolean }) => (m.signer ? 0 : 2) + (m.writable ? 0 : 1);
  const ordered = [...metas.values()].sort((a, b) => rank(a) - rank(b));
  // The fee payer stays first: it is the first writable signer and the sort is stable.
  const indexOf = new Map(ordered.map((m, i) => [Buffer.from(m.pubkey).toString('hex'), i]));
  const index = (pubkey: Uint8Array) => indexOf.get(Buffer.from(pubkey).toString('hex')) as number;
  const signerCount = ordered.filter((m) => m.signer).length;
  const message = [
    signerCount,
    ordered.filter((m) => m.signer && !m.writable).length,
    ordered.filter((m) => !m.signer && !m.writable).length,
    ...shortVec(ordered.length),
    ...ordered.flatMap((m) => [...m.pubkey]),
    ...recentBlockhash,
    ...shortVec(instructions.length),
    ...instructions.flatMap((ix) => [
      index(ix.programId),
      ...shortVec(ix.accounts.length),
      ...ix.accounts.map((a) => index(a.pubkey)),
      ...shortVec(ix.data.length),
      ...ix.data,
    ]),
  ];
  const messageBytes = new Uint8Array(message);
  const signatures = ordered.slice(0, signerCount).map((m) => {
    const signer = signers.find((s) => Buffer.from(s.publicKey).equals(Buffer.from(m.pubkey)));
    if (!signer) throw new Error('missing signer for a signer account');
    return signer.sign(messageBytes);
  });
  return new Uint8Array([...shortVec(signerCount), ...signatures.flatMap((s) => [...s]), ...messageBytes]);
}
