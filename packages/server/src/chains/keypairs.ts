import type { ChainFamily } from '../domain/address.ts';
import { generateEvmKeypair } from './evm/evm-keypair.ts';
import { generateSolanaKeypair } from './solana/solana-keypair.ts';

export interface GeneratedKeypair {
  readonly address: string;
  /** The form the family's adapter signs with. Never logged, never returned by the API. */
  readonly secretKey: Uint8Array;
}

/**
 * Key generation per chain family. A key pair needs no network: the same Solana key works on
 * mainnet, devnet and the localnet (an EVM key on every EVM chain), so wallets can be created with no
 * chain running (the CLI).
 */
export const KEYPAIR_GENERATORS: Partial<Record<ChainFamily, () => GeneratedKeypair>> = {
  solana: generateSolanaKeypair,
  evm: generateEvmKeypair,
};
