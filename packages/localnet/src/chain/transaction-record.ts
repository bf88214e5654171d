// What the chain remembers about a landed transaction: enough to answer getTransaction,
// getSignatureStatuses, getSignaturesForAddress and getBlock exactly as Agave would.
import type { UiTokenAmount } from './token-account.ts';
import type { TransactionErrorJson } from './transaction-error.ts';

export interface TokenBalance {
  readonly accountIndex: number;
  readonly mint: string;
  readonly owner: string;
  readonly programId: string;
  readonly amount: bigint;
  readonly decimals: number;
  /** For a mint with interest or a multiplier: the amount as shown at execution (Agave's rendering). */
  readonly ui?: UiTokenAmount;
}

export interface InnerInstructionRecord {
  readonly programIdIndex: number;
  readonly accounts: readonly number[];
  readonly data: Uint8Array;
  readonly stackHeight: number;
}

export interface TransactionMeta {
  readonly fee: bigint;
  readonly preBalances: readonly bigint[];
  readonly postBalances: readonly bigint[];
  readonly preTokenBalances: readonly TokenBalance[];
  readonly postTokenBalances: readonly TokenBalance[];
  readonly logMessages: readonly string[];
  /** Indexed by top-level instruction; instructions without CPIs have an empty list. */
  readonly innerInstructions: readonly (readonly InnerInstructionRecord[])[];
  readonly computeUnitsConsumed: bigint;
  readonly loadedAddresses: { readonly writable: readonly string[]; readonly readonly: readonly string[] };
  readonly returnData: { readonly programId: string; readonly data: Uint8Array } | null;
}

export interface TransactionRecord {
  /** Position in the whole ledger, strictly increasing: orders signatures-for-address. */
  readonly seq: number;
  readonly signature: string;
  readonly slot: number;
  readonly blockTime: number;
  readonly wire: Uint8Array;
  readonly err: TransactionErrorJson | null;
  /** Agave's memo field: "[len] text" per memo instruction, joined with "; ". */
  readonly memo: string | null;
  readonly meta: TransactionMeta;
  /** Every account key the transaction touched (static and looked up), for the address index. */
  readonly accountKeys: readonly string[];
}

export interface BlockRecord {
  readonly slot: number;
  readonly blockhash: string;
  readonly previousBlockhash: string;
  readonly parentSlot: number;
  readonly blockHeight: number;
  /** Unix seconds. */
  readonly blockTime: number;
}
