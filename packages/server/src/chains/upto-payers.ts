import type { ChainFamily } from '../domain/address.ts';
import { uptoEvmPayer } from './evm/upto-evm-payer.ts';
import type { UptoPayerFactory } from './upto-payer.ts';

/**
 * The buyer's side of x402 `upto` for custodial wallets, per chain family (see UptoPayer); a family
 * without one is refused naming it. Solana has none yet.
 */
export const UPTO_PAYERS: Partial<Record<ChainFamily, UptoPayerFactory>> = {
  evm: uptoEvmPayer,
};
