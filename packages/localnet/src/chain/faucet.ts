// The airdrop faucet: a funded operator keypair whose transfers go through the chain like any
// other transaction, so an airdrop has a real signature that clients can confirm and look up.

import { decodeBase58 } from '../wire/base58.ts';
import { buildLegacyTransaction, type KeypairSigner } from '../wire/legacy-transaction.ts';
import { decodeWireTransaction } from '../wire/wire-transaction.ts';
import type { Chain } from './chain.ts';
import type { TransactionRecord } from './transaction-record.ts';

export const LAMPORTS_PER_SOL = 1_000_000_000n;
/** Per-request bound, as a real faucet has one. */
export const MAX_AIRDROP_LAMPORTS = 1000n * LAMPORTS_PER_SOL;
/** What the faucet holds at genesis. */
export const FAUCET_GENESIS_LAMPORTS = 500_000_000n * LAMPORTS_PER_SOL;

export const SYSTEM_PROGRAM = new Uint8Array(32);

export function systemTransfer(from: Uint8Array, to: Uint8Array, lamports: bigint) {
  const data = new Uint8Array(12);
  const view = new DataView(data.buffer);
  view.setUint32(0, 2, true);
  view.setBigUint64(4, lamports, true);
  return {
    programId: SYSTEM_PROGRAM,
    accounts: [
      { pubkey: from, signer: true, writable: true },
      { pubkey: to, signer: false, writable: true },
    ],
    data,
  };
}

export class Faucet {
  constructor(
    private readonly chain: Chain,
    readonly signer: KeypairSigner,
  ) {}

  /** Sends `lamports` to `to`; the caller bounds the amount. Throws TransactionRejected on failure. */
  airdrop(to: Uint8Array, lamports: bigint): TransactionRecord {
    const blockhash = decodeBase58(this.chain.blockAt('processed').blockhash) as Uint8Array;
    const bytes = buildLegacyTransaction(
      [this.signer],
      [systemTransfer(this.signer.publicKey, to, lamports)],
      blockhash,
    );
    return this.chain.sendTransaction(decodeWireTransaction(bytes), true);
  }
}
