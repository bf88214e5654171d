/** One account as the chain holds it at some commitment: what reads answer and the ledger stores per slot. */
export interface AccountSnapshot {
  readonly lamports: bigint;
  readonly data: Uint8Array;
  readonly owner: string;
  readonly executable: boolean;
  readonly rentEpoch: bigint;
}
