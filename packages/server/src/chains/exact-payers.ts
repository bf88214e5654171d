import type { ChainFamily } from '../domain/address.ts';
import { exactEvmPayer } from './evm/exact-evm-payer.ts';
import type { ExactPayerFactory } from './exact-payer.ts';
import { exactSvmPayer } from './solana/exact-svm-payer.ts';

/**
 * The buyer's side of x402 `exact`, per chain family (see ExactPayer). Code outside chains/ asks this
 * registry, as it asks KEYPAIR_GENERATORS, and never branches on a family's name.
 */
export const EXACT_PAYERS: Partial<Record<ChainFamily, ExactPayerFactory>> = {
  solana: exactSvmPayer,
  evm: exactEvmPayer,
};
