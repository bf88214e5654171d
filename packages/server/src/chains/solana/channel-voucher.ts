import { createPublicKey, verify, webcrypto } from 'node:crypto';
import { address, getAddressEncoder, type Instruction } from '@solana/kit';
import { decodeBase58 } from '../../domain/base58.ts';
import { ED25519_PROGRAM } from './payment-channel-program.ts';

/**
 * A payment-channel voucher: the receiver authorizer's Ed25519 signature over 50 bytes — magic 0x56 0x01,
 * the channel, the cumulative amount (u64 LE) and its expiry (i64 LE, Unix seconds). The program applies
 * it only through an Ed25519 precompile instruction placed just before the one that settles.
 */
export function voucherMessage(channel: string, cumulative: bigint, expiresAt: bigint): Uint8Array {
  const message = new Uint8Array(50);
  message.set([0x56, 0x01]);
  message.set(getAddressEncoder().encode(address(channel)), 2);
  const view = new DataView(message.buffer);
  view.setBigUint64(34, cumulative, true);
  view.setBigInt64(42, expiresAt, true);
  return message;
}

const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** Whether `signature` (base58, 64 bytes) is `signer`'s over `message`. */
export function voucherSignedBy(message: Uint8Array, signature: string, signer: string): boolean {
  const sig = decodeBase58(signature);
  const key = decodeBase58(signer);
  if (sig?.length !== 64 || key?.length !== 32) return false;
  const publicKey = createPublicKey({
    key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(key)]),
    format: 'der',
    type: 'spki',
  });
  return verify(null, message, publicKey, sig);
}

/** Signs `message` with a WebCrypto Ed25519 private key (the facilitator's, as delegated receiver authorizer). */
export async function signVoucher(message: Uint8Array, privateKey: webcrypto.CryptoKey): Promise<Uint8Array> {
  return new Uint8Array(await webcrypto.subtle.sign('Ed25519', privateKey, message));
}

/** The Ed25519 precompile instruction carrying one signature, its key and message in its own data. */
export function ed25519Instruction(signer: string, signature: Uint8Array, message: Uint8Array): Instruction {
  const data = new Uint8Array(112 + message.length);
  const view = new DataView(data.buffer);
  data[0] = 1; // one signature
  // Offsets into this instruction's data (0xffff: this instruction) of signature, key and message.
  for (const [at, value] of [
    [2, 48],
    [4, 0xffff],
    [6, 16],
    [8, 0xffff],
    [10, 112],
    [12, message.length],
    [14, 0xffff],
  ] as const)
    view.setUint16(at, value, true);
  data.set(getAddressEncoder().encode(address(signer)), 16);
  data.set(signature, 48);
  data.set(message, 112);
  return { programAddress: ED25519_PROGRAM, data };
}
