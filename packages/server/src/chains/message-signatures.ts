import type { ChainFamily } from '../domain/address.ts';
import { verifyEvmMessageSignature } from './evm/evm-message-signature.ts';
import { verifySolanaMessageSignature } from './solana/solana-message-signature.ts';

/**
 * Whether `signature` is a signature of `message` (its UTF-8 text, as wallets sign messages) by the
 * key behind `address`, per chain family: ed25519 on Solana, EIP-191 `personal_sign` on EVM. Needs no
 * network: it proves control of an address offline, so the CLI can check it with no chain running.
 * A signature that cannot be read is false, never an exception.
 */
export type MessageSignatureVerifier = (
  address: string,
  message: string,
  signature: string,
) => boolean | Promise<boolean>;

export const MESSAGE_SIGNATURE_VERIFIERS: Record<ChainFamily, MessageSignatureVerifier> = {
  solana: verifySolanaMessageSignature,
  evm: verifyEvmMessageSignature,
};
