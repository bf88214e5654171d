import type { NetworkInfo, TokenInfo } from '../domain/network.ts';
import type { RpcEndpoints } from './rpc-endpoints.ts';

/**
 * The port every chain family implements (Solana with @solana/kit, EVM with viem). Services see only
 * this: addresses and signatures are strings, amounts are bigint atomic units, transactions are bytes.
 * Expected outcomes (a failed or expired transaction) are data; a ChainError means the chain refused
 * or could not be reached.
 */
export interface ChainAdapter {
  readonly info: NetworkInfo;
  /** Funds addresses on local networks; undefined elsewhere. */
  readonly faucet: LocalFaucet | undefined;
  /** Present on chains that order a sender's transactions by a nonce (EVM); absent on Solana. */
  readonly nonces?: AccountNonces;
  /**
   * The network's RPC endpoints, with their time limit and failover. Other clients of the same network
   * (the x402 facilitator's) are built on this very list, so an endpoint found down by one is skipped
   * by all, and every call is counted under the network in metrics.
   */
  readonly endpoints: RpcEndpoints;

  /** Resolves when the RPC endpoint answers; /readyz asks it. */
  ping(): Promise<void>;
  /** Native balance in atomic units (lamports, wei), at `confirmed`. */
  getBalance(address: string): Promise<bigint>;
  /**
   * What `owner` holds of a token and can send with `prepareTransfer` (Solana: its associated token
   * account; EVM: balanceOf), atomic units at `confirmed`; 0 when it holds none.
   */
  getTokenBalance(owner: string, token: string): Promise<bigint>;
  getBlockHeight(): Promise<bigint>;

  /** A new key pair for a custodial wallet; the secret is the form `sign` takes. */
  generateKeypair(): Promise<{ address: string; secretKey: Uint8Array }>;
  /**
   * Builds an unsigned transfer of the native currency, or of `request.token`; the sender pays the fees
   * (and, for a token, whatever opening the recipient's token account costs).
   */
  prepareTransfer(request: TransferRequest): Promise<PreparedTransaction>;
  /** Signs a prepared transaction with a custodial key (Solana: 64-byte secret key). */
  sign(prepared: PreparedTransaction, secretKey: Uint8Array): Promise<SignedTransaction>;
  /** Sends signed wire bytes as they are; returns the transaction signature. */
  broadcast(wire: Uint8Array): Promise<string>;
  /**
   * Waits until the transaction is confirmed or failed, its blockhash expires, or `timeoutMs` passes
   * (then `pending`: it may still land). Also `pending`, at once, when every RPC endpoint of the
   * network is down: nothing more can be learnt until one is back. Subscriptions first, with polling
   * as a fallback.
   */
  waitForConfirmation(
    signature: string,
    lastValidBlockHeight: bigint,
    timeoutMs: number,
  ): Promise<ConfirmationOutcome>;

  /**
   * Where a broadcast transaction stands now, without waiting: undefined when the chain does not know
   * it (not landed yet, or never will), else confirmed / finalized / failed.
   */
  getSignatureStatus(signature: string): Promise<ConfirmationOutcome | undefined>;
  /**
   * The newest slot (EVM: block number) the answering node holds final: Solana's `finalized`
   * commitment; EVM the `finalized` block tag, or the latest block less the network's finality
   * confirmations where the node has no such tag. A transaction not found while this is at or past the
   * slot it was seen in is not in the canonical chain; one not found while this is behind that slot
   * proves nothing (the node may lag). Never goes back on a healthy node.
   */
  finalizedSlot(): Promise<bigint>;
  /** The block height of the block at `slot` (Solana; on EVM, slot and block number are the same). */
  blockHeightOf(slot: bigint): Promise<bigint>;

  /** A landed transaction, or undefined when the chain has none with this signature. */
  getTransaction(signature: string): Promise<ChainTransaction | undefined>;
  /** Signatures of transactions that mention `address` (e.g. a payment's reference), newest first. */
  findSignatures(address: string, options?: FindSignaturesOptions): Promise<SignatureInfo[]>;
  /** A token mint (Solana) or contract (EVM), or undefined when `address` is not one. */
  getTokenInfo(address: string): Promise<ChainTokenInfo | undefined>;
  /**
   * Every token holding of `owner` (Solana: token accounts of SPL Token and Token-2022; EVM, where an
   * address has no list of its tokens: the `known` ERC-20 tokens it holds, default the network's own),
   * in as few RPC round trips as the chain allows.
   */
  getTokenAccounts(owner: string, known?: readonly TokenInfo[]): Promise<ChainTokenAccount[]>;

  close(): Promise<void>;
}

export interface FindSignaturesOptions {
  /** At most this many, newest first; default 100. */
  readonly limit?: number;
  /**
   * The `lastValidBlockHeight` the wanted transactions were prepared with, when known: none of them can
   * be in a block before it was prepared, so a chain that has to scan blocks for them (EVM) starts
   * there instead of at its whole scan window. Chains with an index (Solana) ignore it.
   */
  readonly preparedFor?: bigint | null;
}

export interface TransferRequest {
  readonly from: string;
  readonly to: string;
  /** Atomic units. */
  readonly amount: bigint;
  /** Total priority fee in atomic units; absent: chosen from recent fees on the network. */
  readonly priorityFee?: bigint;
  /** Text written on chain with the transfer (Solana: Memo program). */
  readonly memo?: string;
  /** An address added read-only, so the transaction can be found by it once broadcast (Solana Pay style). */
  readonly reference?: string;
  /** The sender's nonce (EVM); absent: the node's pending count. Ignored by chains without nonces (Solana). */
  readonly nonce?: bigint;
  /** A token to move instead of the native currency; `amount` is then in its atomic units. */
  readonly token?: TransferToken;
}

/** A token a transfer moves: its mint (Solana) or contract (EVM), with the decimals it states. */
export interface TransferToken {
  readonly address: string;
  readonly decimals: number;
}

export interface PreparedTransaction {
  /** Wire bytes with empty signature slots: what a local-mode caller signs. */
  readonly unsigned: Uint8Array;
  readonly lastValidBlockHeight: bigint;
  /**
   * Everything the sender pays in the native currency besides the amount: base fee plus priority fee,
   * plus `accountRent` for a token transfer that opens the recipient's token account. Atomic units.
   */
  readonly fee: bigint;
  /**
   * Of `fee`, what opening the recipient's token account costs (Solana: the rent-exempt deposit of its
   * associated token account, which the sender pays and the recipient then owns); 0 or absent otherwise.
   */
  readonly accountRent?: bigint;
  readonly priorityFee: bigint;
  readonly feePayer: string;
  /**
   * How long, from now, the transaction can still land: the blocks left before lastValidBlockHeight
   * times the network's recent slot time (an estimate that errs early). Absent when unknown.
   */
  readonly validForMs?: number;
  /** The nonce the transaction carries (EVM); absent on chains without nonces. */
  readonly nonce?: bigint;
}

/**
 * A sender's transactions ordered by a counter (EVM): at most one transaction per (sender, nonce) can
 * ever be in a block. That is what lets gate402 allocate nonces itself, replace a stuck transaction
 * without paying twice, and call a transaction that never landed final only once its nonce is used.
 */
export interface AccountNonces {
  /** How many of the sender's transactions are in blocks: every nonce below it is used for good. */
  minedCount(address: string): Promise<bigint>;
  /**
   * Whether the node holds transactions of the sender that are not mined yet (its pending count is
   * ahead of the mined count): a transaction broadcast in time may still be waiting for a block.
   */
  hasWaiting(address: string): Promise<boolean>;
  /** The prepared transaction with another nonce, and nothing else changed; no network call. */
  withNonce(prepared: PreparedTransaction, nonce: bigint): PreparedTransaction;
  /** Whether a transaction prepared with `lastValidBlockHeight` has waited long enough, at `height`, to be replaced. */
  replacementDue(lastValidBlockHeight: bigint, height: bigint): boolean;
  /**
   * Whether the node holds the transaction `signature` of `address` with `nonce`, the next nonce to be
   * mined, able to pay for it at the latest base fee, and yet does not count it pending: the node will
   * never mine it, however many blocks go by, and only a new transaction with the nonce (a replacement)
   * takes its place. anvil's pool strands a transaction this way when the one before it is mined while
   * it is being added, and every later one of the sender waits behind it.
   */
  stranded(address: string, nonce: bigint, signature: string): Promise<boolean>;
  /**
   * A replacement for the signed transaction `previous`: the same sender, nonce, recipient, value and
   * calldata, with fees raised by at least what nodes require of a replacement and at least to what the
   * network asks now. Whichever of the two lands, the other never can.
   */
  prepareReplacement(previous: Uint8Array): Promise<PreparedTransaction>;
  /** The sender and nonce of signed wire bytes (recovered from the signature); no network call. */
  signedBy(wire: Uint8Array): Promise<{ sender: string; nonce: bigint }>;
}

export interface SignedTransaction {
  readonly wire: Uint8Array;
  readonly signature: string;
  readonly lastValidBlockHeight: bigint;
}

export type ConfirmationOutcome =
  | { readonly status: 'confirmed' | 'finalized'; readonly slot: bigint }
  | { readonly status: 'failed'; readonly slot: bigint; readonly error: string }
  | { readonly status: 'expired' }
  | { readonly status: 'pending' };

export interface ChainTransaction {
  readonly signature: string;
  readonly slot: bigint;
  /** Unix ms, when the chain reports it. */
  readonly blockTime: number | null;
  readonly fee: bigint;
  /** Why it failed on chain; null for success. */
  readonly error: string | null;
  readonly feePayer: string;
  readonly nativeTransfers: readonly {
    readonly from: string;
    readonly to: string;
    readonly amount: bigint;
  }[];
  /**
   * Token movements: the owners (wallets, not token accounts) on both sides, the token's mint or
   * contract, and atomic units. Solana: SPL Token and Token-2022 transfers; EVM: the ERC-20 Transfer
   * events of the receipt.
   */
  readonly tokenTransfers: readonly {
    readonly token: string;
    readonly from: string;
    readonly to: string;
    readonly amount: bigint;
  }[];
  readonly memos: readonly string[];
  /** Every account the transaction names. */
  readonly accounts: readonly string[];
}

export interface SignatureInfo {
  readonly signature: string;
  readonly slot: bigint;
  readonly error: string | null;
}

export interface ChainTokenInfo {
  readonly address: string;
  readonly decimals: number;
  /** As the contract states them (ERC-20); a Solana mint has none without its metadata account. */
  readonly name?: string;
  readonly symbol?: string;
  /** Off-chain metadata document (Token-2022 metadata or Metaplex), when the token names one. */
  readonly uri?: string;
  /** Atomic units. */
  readonly supply: bigint;
  readonly mintAuthority: string | null;
  readonly freezeAuthority: string | null;
  /** The token program (SPL Token or Token-2022) or standard (ERC-20). */
  readonly program: string;
  /**
   * Token-2022 extensions of the mint that make a plain transfer unsafe to pay with: the recipient
   * gets less (`transfer-fee`), a program of the mint's choosing runs in it (`transfer-hook`), the
   * tokens can be taken back (`permanent-delegate`) or cannot be moved at all (`non-transferable`).
   * Empty for SPL Token mints and ERC-20 contracts.
   */
  readonly transferRestrictions: readonly TransferRestriction[];
}

export type TransferRestriction =
  | 'transfer-fee'
  | 'transfer-hook'
  | 'permanent-delegate'
  | 'non-transferable';

/** One token holding. */
export interface ChainTokenAccount {
  /** The token account (Solana) or the token contract (EVM) holding the balance. */
  readonly address: string;
  readonly mint: string;
  readonly decimals: number;
  /** Atomic units. */
  readonly amount: bigint;
  /** As in ChainTokenInfo.program. */
  readonly program: string;
}

/** Money for nothing, on local networks only. */
export interface LocalFaucet {
  /** Sends native currency (atomic units); resolves with the transaction signature once confirmed. */
  fundNative(address: string, amount: bigint): Promise<string>;
  /** Mints a known token (by symbol) to `owner`; resolves with the signature. */
  fundToken(symbol: string, owner: string, amount: bigint): Promise<string>;
}
