// The embedded chain: LiteSVM for execution, plus what a validator adds around it — a slot
// clock, block heights, a window of valid blockhashes, commitment levels, the wall-clock Clock
// sysvar, fees and balances in transaction results, a durable signature ledger, and persistence.
//
// Invariants:
// - A signature is executed at most once: every landed transaction (success or failure) is in
//   the ledger before `sendTransaction` returns, and every send checks the ledger first.
// - Crash consistency: transactions land in the open (working) slot; when it ends, its block, its
//   transactions and every account they changed are committed in one durable SQLite transaction
//   (LedgerStore.commit) before anything reports the slot. Nothing of the open slot is reported as
//   landed (statuses, getTransaction, history, signature and logs notifications): a crash loses
//   the open slot whole — as a skipped slot on a cluster — and never one half of it.
// - Nothing reaches LiteSVM that `decodeWireTransaction` did not accept.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  Account,
  Clock,
  FailedTransactionMetadata,
  LiteSvm,
  type TransactionMetadata,
} from 'litesvm/dist/internal.js';
import { AddressNames } from '../wire/address-names.ts';
import { decodeBase58, encodeBase58 } from '../wire/base58.ts';
import { rawKey, rawKeyOf } from '../wire/raw-key.ts';
import { isStaticWritable, type WireTransaction } from '../wire/wire-transaction.ts';
import type { AccountSnapshot } from './account-snapshot.ts';
import { BlockhashWindow, MAX_PROCESSING_AGE } from './blockhash-window.ts';
import { transactionFee } from './fee.ts';
import { scaledUiAmounts } from './ui-amount.ts';

export type { AccountSnapshot } from './account-snapshot.ts';

import { LedgerStore, SCHEMA_VERSION_WITH_SNAPSHOT } from './ledger-store.ts';
import { MEMO_PROGRAMS, mainnetMemoLogs, serveNewMemoProgram } from './memo-programs.ts';
import { servePaymentChannelsProgram } from './payment-channels-program.ts';
import { RecentSignatures } from './recent-signatures.ts';
import {
  decodeMint,
  decodeTokenAccount,
  isTokenProgram,
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
} from './token-account.ts';
import { type TransactionErrorJson, transactionErrorJson } from './transaction-error.ts';
import type {
  BlockRecord,
  InnerInstructionRecord,
  TokenBalance,
  TransactionMeta,
  TransactionRecord,
} from './transaction-record.ts';

export type Commitment = 'processed' | 'confirmed' | 'finalized';

export interface ChainOptions {
  /** Where accounts and the ledger live; absent: everything in memory. */
  readonly ledgerDir?: string;
  /** Slot length in milliseconds; 0 means manual mode (`advanceSlots`). */
  readonly slotMs: number;
  /** How many slots after landing a transaction is finalized. */
  readonly finalizedDepth: number;
  /** Test hooks (`dropSlots`); off by default. */
  readonly testHooks?: boolean;
}

/** Genesis hashes of Solana's public clusters (mainnet-beta, devnet, testnet): no test hook runs there. */
const PUBLIC_GENESIS_HASHES = new Set([
  '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d',
  'EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG',
  '4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY',
]);

/** Why `dropSlots` refused; nothing was changed. */
export class DropSlotsRefused extends Error {
  override readonly name = 'DropSlotsRefused';
}

export interface ChainListener {
  /** A transaction landed (processed); `writable` are the accounts it stored. */
  onTransaction(record: TransactionRecord, writable: readonly string[]): void;
  /** A new slot started: `slot` is processed, `slot - 1` confirmed, `slot - finalizedDepth` finalized. */
  onSlot(slot: number): void;
}

/** Why a transaction did not land; `logs`/`unitsConsumed` come from the failed execution, if any. */
export class TransactionRejected extends Error {
  override readonly name = 'TransactionRejected';
  constructor(
    readonly err: TransactionErrorJson,
    readonly logs: readonly string[],
    readonly unitsConsumed: bigint,
  ) {
    super(typeof err === 'string' ? err : JSON.stringify(err));
  }
}

export interface SimulationResult {
  readonly err: TransactionErrorJson | null;
  readonly logs: readonly string[];
  readonly unitsConsumed: bigint;
  readonly accounts: readonly (AccountSnapshot | null)[] | null;
  readonly returnData: { readonly programId: string; readonly data: Uint8Array } | null;
  readonly fee: bigint;
  readonly preBalances: readonly bigint[];
  readonly postBalances: readonly bigint[];
  /** Inner instructions of the execution (null when it did not run), and the keys they index. */
  readonly innerInstructions: readonly (readonly InnerInstructionRecord[])[] | null;
  readonly accountKeys: readonly string[];
  readonly preTokenBalances: readonly TokenBalance[];
  readonly postTokenBalances: readonly TokenBalance[];
  readonly loadedAddresses: TransactionMeta['loadedAddresses'];
}

export interface PerformanceSample {
  readonly slot: number;
  readonly numTransactions: number;
  readonly numSlots: number;
  readonly samplePeriodSecs: number;
  readonly numNonVoteTransactions: number;
}

export interface SignatureStatus {
  readonly slot: number;
  readonly err: TransactionErrorJson | null;
  readonly confirmations: number | null;
  readonly confirmationStatus: Commitment;
}

/** How far back getSignatureStatuses looks without searchTransactionHistory (Agave's status cache). */
const STATUS_CACHE_SLOTS = 300;
const SLOTS_PER_EPOCH = 432_000;
/** Agave samples performance every 60 s and keeps 720 samples (12 hours). */
const PERFORMANCE_SAMPLE_SECONDS = 60;
const PERFORMANCE_SAMPLES_KEPT = 720;
/** Agave's SlotHashes sysvar holds the last 512 slots (solana_slot_hashes::MAX_ENTRIES). */
const SLOT_HASHES_MAX_ENTRIES = 512;
const TOKEN_ACCOUNT_CACHE_LIMIT = 100_000;
const MEMO_PROGRAM_KEYS = new Set(MEMO_PROGRAMS.map(rawKeyOf));
const TOKEN_PROGRAMS = new Set([TOKEN_PROGRAM, TOKEN_2022_PROGRAM].map(rawKeyOf));
const TOKEN_2022_RAW = rawKeyOf(TOKEN_2022_PROGRAM);
const ADDRESS_LOOKUP_TABLE = rawKeyOf('AddressLookupTab1e1111111111111111111111111');
/**
 * Programs that never set return data (and never invoke another program): when nothing else ran,
 * the transaction's return data is known to be empty without asking LiteSVM for it.
 */
const WITHOUT_RETURN_DATA = new Set(
  ['11111111111111111111111111111111', 'ComputeBudget111111111111111111111111111111'].map(rawKeyOf),
);
const ADDRESS_NAMES_LIMIT = 100_000;
/** The sysvars each slot start rewrites (Clock, SlotHashes), by base58 and raw address. */
const SLOT_SYSVARS = [
  'SysvarC1ock11111111111111111111111111111111',
  'SysvarS1otHashes111111111111111111111111111',
].map((name) => [name, decodeBase58(name) as Uint8Array] as const);
/** Owners of the accounts LiteSVM creates itself: native programs, BPF programs and their data, sysvars. */
const BUILTIN_OWNERS = [
  'NativeLoader1111111111111111111111111111111',
  'BPFLoader1111111111111111111111111111111111',
  'BPFLoader2111111111111111111111111111111111',
  'BPFLoaderUpgradeab1e11111111111111111111111',
  'LoaderV411111111111111111111111111111111111',
  'Sysvar1111111111111111111111111111111111111',
];

interface ResolvedKeys {
  readonly bytes: readonly Uint8Array[];
  /** `rawKey` of each key, for the Map lookups of the hot path. */
  readonly raw: readonly string[];
  /** Base58 of each key. */
  readonly all: string[];
  readonly writable: readonly boolean[];
  readonly programIndexes: ReadonlySet<number>;
  readonly loaded: TransactionMeta['loadedAddresses'];
}
const LOOKUP_TABLE_HEADER = 56;

export class Chain {
  readonly genesisHash: string;
  private readonly svm: LiteSvm;
  private readonly ledger: LedgerStore;
  private readonly window = new BlockhashWindow();
  private readonly listeners = new Set<ChainListener>();
  /**
   * Decimals of mints, by base58 address, for the token balances of transactions. Invariant: a mint's
   * decimals change only when the mint is closed (Token-2022 MintCloseAuthority) and opened again at its
   * address, and an account is closed, reassigned or initialised only as a writable key of a transaction
   * that invokes a token program (closing a mint, or the InitializeMint of a new one), or by `setAccount`:
   * entries are dropped for exactly those, so a mint opened again is read with its own decimals.
   */
  private readonly decimalsOfMint = new Map<string, number>();
  private readonly recentSignatures = new RecentSignatures();
  private readonly addressNames = new AddressNames(ADDRESS_NAMES_LIMIT);
  /** Blocks of the last slots, newest last, enough for every commitment level. */
  private recentBlocks: BlockRecord[] = [];
  /**
   * The SlotHashes sysvar's entries, newest first: each ended slot with its hash (here its blockhash),
   * added when the next slot starts, as a bank adds its parent's — so a slot from getSlot at
   * `confirmed` or `finalized` is a recent slot (AddressLookupTable's createLookupTable needs one).
   */
  private slotHashes: { slot: bigint; hash: string }[] = [];
  private seq: number;
  private timer: NodeJS.Timeout | undefined;
  /**
   * Accounts changed in the open slot, by base58 address, with their raw key: the writable keys of
   * its landed transactions and the operator's `setAccount`s. Their state is read when the slot
   * is committed. (The runtime never changes an account a message does not mark writable.)
   */
  private changedAccounts = new Map<string, Uint8Array>();
  private samples: PerformanceSample[] = [];
  /**
   * For reads at `confirmed` and `finalized`: each account's state before the first change in a
   * slot, by slot (the open one and the last `finalizedDepth` ended ones), by base58 address. An
   * account's state at the end of slot X is its pre-image in the first later slot that changed it,
   * else its current state.
   */
  private readonly preImages = new Map<number, Map<string, AccountSnapshot | null>>();
  private lastSample: { at: number; slot: number; seq: number } | undefined;
  /** LiteSVM's own programs, program data and sysvars (see builtinAccounts), read once. */
  private builtins: { address: string; lamports: bigint }[] | undefined;
  private closed = false;
  /**
   * The finalized slot never moves back: after `dropSlots` the block `finalizedDepth` below the
   * processed one can be older than what was finalized, so the finalized slot is at least this
   * (persisted as `finalized_floor`).
   */
  private finalizedFloor: number;
  /** The first slot with pre-images (they are kept in memory only): `dropSlots` cannot go below it. */
  private rollbackFrom = Number.MAX_SAFE_INTEGER;

  private constructor(
    private readonly options: ChainOptions,
    svm: LiteSvm,
    ledger: LedgerStore,
    genesisHash: string,
  ) {
    this.svm = svm;
    this.ledger = ledger;
    this.genesisHash = genesisHash;
    this.seq = ledger.lastSeq();
    this.finalizedFloor = Number(ledger.getMeta('finalized_floor') ?? -1);
    // LiteSVM's own blockhash check and history are replaced by the window and the ledger.
    svm.setBlockhashCheck(false);
    svm.setTransactionHistory(0n);
    svm.setSigverify(true);
    // LiteSVM's own airdrop account (1,000,000 SOL at a random address, new at every start) is not
    // used — the faucet is an account of the ledger — and would be a ghost holder: emptied.
    svm.setLamports(0n);
    serveNewMemoProgram(svm);
    servePaymentChannelsProgram(svm);
    const blocks = ledger.recentBlocks(SLOT_HASHES_MAX_ENTRIES).reverse();
    // All but the newest: the next startSlot adds it, as the new slot's parent.
    this.slotHashes = blocks
      .slice(0, -1)
      .map((b) => ({ slot: BigInt(b.slot), hash: b.blockhash }))
      .reverse();
    const window = blocks.slice(-(MAX_PROCESSING_AGE + 1));
    for (const block of window)
      this.window.push(decodeBase58(block.blockhash) as Uint8Array, block.blockHeight, block.slot);
    this.recentBlocks = blocks.slice(-(options.finalizedDepth + 2));
    const oldest = window[0];
    if (oldest) {
      for (const { signature, slot } of ledger.signaturesSince(oldest.slot)) {
        this.recentSignatures.add(decodeBase58(signature) as Uint8Array, slot);
      }
    }
  }

  /**
   * Opens the chain in `options.ledgerDir` (restoring accounts, ledger and slot), or creates it:
   * `genesis` is called once on a new chain to place the operator's accounts.
   */
  static open(options: ChainOptions, genesis: (chain: Chain) => void): Chain {
    const dir = options.ledgerDir;
    if (dir !== undefined) mkdirSync(dir, { recursive: true });
    const ledger = new LedgerStore(dir === undefined ? ':memory:' : join(dir, 'ledger.sqlite'));
    // genesis_hash is committed together with the genesis accounts: present, the state is whole.
    const existingGenesis = ledger.getMeta('genesis_hash');
    if (existingGenesis !== undefined) {
      const svm = new LiteSvm();
      if (ledger.storedVersion === SCHEMA_VERSION_WITH_SNAPSHOT)
        importSnapshot(ledger, join(dir as string, 'accounts.bin'));
      for (const { address, account } of ledger.accounts()) {
        svm.setAccount(
          decodeBase58(address) as Uint8Array,
          new Account(
            account.lamports,
            account.data,
            decodeBase58(account.owner) as Uint8Array,
            account.executable,
            account.rentEpoch,
          ),
        );
      }
      const chain = new Chain(options, svm, ledger, existingGenesis);
      // The slot after the last committed one: the open slot a crash lost gets the same number and
      // blockhash again (both derive from the parent), so blockhashes handed out stay valid. After
      // dropped slots the numbers continue after the highest dropped one (`next_slot`).
      const nextSlot = Number(ledger.getMeta('next_slot') ?? 0);
      chain.startSlot(chain.recentBlocks.length > 0 ? Math.max(chain.slot + 1, nextSlot) : 0);
      return chain;
    }
    // A new chain: a random genesis hash keeps it distinct from every other cluster.
    const genesisHash = encodeBase58(
      createHash('sha256')
        .update(crypto.getRandomValues(new Uint8Array(32)))
        .digest(),
    );
    ledger.setMeta('genesis_hash', genesisHash);
    const chain = new Chain(options, new LiteSvm(), ledger, genesisHash);
    chain.startSlot(0);
    genesis(chain);
    chain.commit();
    return chain;
  }

  /** Operator settings kept in the ledger (e.g. the USDC-like mint's address). */
  getMeta(key: string): string | undefined {
    return this.ledger.getMeta(key);
  }

  setMeta(key: string, value: string): void {
    this.ledger.setMeta(key, value);
  }

  addListener(listener: ChainListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Starts the slot clock (nothing in manual mode). */
  start(): void {
    if (this.options.slotMs > 0 && this.timer === undefined) {
      this.timer = setInterval(() => this.advanceSlots(1), this.options.slotMs);
    }
  }

  get finalizedDepth(): number {
    return this.options.finalizedDepth;
  }

  /** The processed slot: where the next transaction lands. */
  get slot(): number {
    return this.latestBlock().slot;
  }

  slotAt(commitment: Commitment): number {
    return this.blockAt(commitment).slot;
  }

  blockAt(commitment: Commitment): BlockRecord {
    const depth =
      commitment === 'processed' ? 0 : commitment === 'confirmed' ? 1 : this.options.finalizedDepth;
    const blocks = this.recentBlocks;
    const block = blocks[Math.max(0, blocks.length - 1 - depth)] as BlockRecord;
    if (commitment !== 'finalized' || block.slot >= this.finalizedFloor) return block;
    return (
      blocks.find((b) => b.slot === this.finalizedFloor) ?? this.ledger.block(this.finalizedFloor) ?? block
    );
  }

  /** The finalized (root) slot when `slot` was the processed one: `finalizedDepth` blocks below it. */
  rootOf(slot: number): number {
    const root =
      slot === this.slot ? this.slotAt('finalized') : this.ledger.slotAtDepth(slot, this.finalizedDepth);
    return Math.max(root ?? slot - this.finalizedDepth, this.finalizedFloor);
  }

  /** Slots that have a block in [start, end] (dropped slots have none), at most `limit`. */
  blockSlots(start: number, end: number, limit: number): number[] {
    return this.ledger.slotsInRange(start, end, limit);
  }

  /** Whether `slot` was dropped or skipped: older than the processed slot and without a block. */
  isSkipped(slot: number): boolean {
    return slot < this.slot && this.block(slot) === undefined;
  }

  get testHooks(): boolean {
    return this.options.testHooks === true;
  }

  latestBlock(): BlockRecord {
    return this.recentBlocks[this.recentBlocks.length - 1] as BlockRecord;
  }

  transactionCount(): number {
    return this.seq;
  }

  /**
   * Lamports of every account, as of the last committed slot: those a transaction or the operator
   * changed (the ledger) and the programs, program data and sysvars LiteSVM creates itself, as Agave's
   * capitalization counts every account in the bank.
   */
  totalSupply(): bigint {
    let total = this.ledger.totalLamports();
    for (const { lamports } of this.builtinAccounts()) total += lamports;
    return total;
  }

  largestAccounts(limit: number): { address: string; lamports: bigint }[] {
    return [...this.ledger.largestAccounts(limit), ...this.builtinAccounts()]
      .sort((a, b) =>
        a.lamports === b.lamports ? (a.address < b.address ? -1 : 1) : a.lamports > b.lamports ? -1 : 1,
      )
      .slice(0, limit);
  }

  /** LiteSVM's own accounts (by their owners: loaders and the sysvar id) that the ledger does not hold. */
  private builtinAccounts(): { address: string; lamports: bigint }[] {
    this.builtins ??= BUILTIN_OWNERS.flatMap((owner) =>
      this.programAccounts(decodeBase58(owner) as Uint8Array).map(({ address, account }) => ({
        address,
        lamports: account.lamports,
      })),
    );
    return this.builtins.filter(({ address }) => !this.ledger.hasAccount(address));
  }

  /** getRecentPerformanceSamples: one sample per PERFORMANCE_SAMPLE_SECONDS, newest first. */
  performanceSamples(limit: number): readonly PerformanceSample[] {
    return this.samples.slice(0, limit);
  }

  epochInfo(commitment: Commitment) {
    const block = this.blockAt(commitment);
    return {
      absoluteSlot: block.slot,
      blockHeight: block.blockHeight,
      epoch: Math.floor(block.slot / SLOTS_PER_EPOCH),
      slotIndex: block.slot % SLOTS_PER_EPOCH,
      slotsInEpoch: SLOTS_PER_EPOCH,
      transactionCount: this.seq,
    };
  }

  isBlockhashValid(hash: Uint8Array): boolean {
    return this.window.isValid(hash, this.latestBlock().blockHeight);
  }

  minimumBalanceForRentExemption(dataLength: bigint): bigint {
    return this.svm.minimumBalanceForRentExemption(dataLength);
  }

  getAccount(address: Uint8Array): AccountSnapshot | null {
    return snapshotOf(this.svm.getAccount(address));
  }

  /** The account as of the slot of `commitment` (processed: the open slot, as it is now). */
  accountAt(address: Uint8Array, commitment: Commitment): AccountSnapshot | null {
    if (commitment === 'processed' || this.preImages.size === 0) return this.getAccount(address);
    const name = encodeBase58(address);
    for (let slot = this.slotAt(commitment) + 1; slot <= this.slot; slot++) {
      const images = this.preImages.get(slot);
      if (images?.has(name)) return images.get(name) as AccountSnapshot | null;
    }
    return this.getAccount(address);
  }

  /** programAccounts as of the slot of `commitment`. */
  programAccountsAt(
    program: Uint8Array,
    commitment: Commitment,
  ): { address: string; account: AccountSnapshot }[] {
    const live = this.programAccounts(program);
    if (commitment === 'processed' || this.preImages.size === 0) return live;
    const owner = encodeBase58(program);
    const names = new Set(live.map((entry) => entry.address));
    // Accounts changed since may have been owned by the program then (closed or reassigned since).
    for (let slot = this.slotAt(commitment) + 1; slot <= this.slot; slot++)
      for (const name of this.preImages.get(slot)?.keys() ?? []) names.add(name);
    const out: { address: string; account: AccountSnapshot }[] = [];
    for (const address of names) {
      const account = this.accountAt(decodeBase58(address) as Uint8Array, commitment);
      if (account && account.owner === owner) out.push({ address, account });
    }
    return out;
  }

  /** Keeps an account's state from before its first change in the open slot (see preImages). */
  private notePreImage(address: string, key: Uint8Array): void {
    let images = this.preImages.get(this.slot);
    if (images === undefined) {
      images = new Map();
      this.preImages.set(this.slot, images);
    }
    if (!images.has(address)) images.set(address, this.getAccount(key));
  }

  setAccount(address: Uint8Array, account: AccountSnapshot): void {
    this.notePreImage(encodeBase58(address), address);
    this.tokenAccountCache.delete(rawKey(address));
    this.decimalsOfMint.delete(encodeBase58(address));
    this.changedAccounts.set(encodeBase58(address), address.slice());
    this.svm.setAccount(
      address,
      new Account(
        account.lamports,
        account.data,
        decodeBase58(account.owner) as Uint8Array,
        account.executable,
        account.rentEpoch,
      ),
    );
  }

  programAccounts(program: Uint8Array): { address: string; account: AccountSnapshot }[] {
    return this.svm.getProgramAccounts(program).flatMap((entry) => {
      const account = entry.account();
      // Agave treats a zero-lamport account as absent.
      if (account.lamports() === 0n) return [];
      return {
        address: encodeBase58(entry.address),
        account: {
          lamports: account.lamports(),
          data: account.data(),
          owner: encodeBase58(account.owner()),
          executable: account.executable(),
          rentEpoch: account.rentEpoch(),
        },
      };
    });
  }

  mintDecimals(mint: string): number | undefined {
    const cached = this.decimalsOfMint.get(mint);
    if (cached !== undefined) return cached;
    const bytes = decodeBase58(mint);
    // Read as getAccount reads it: an account of zero lamports (a closed one) is absent.
    const account = bytes && this.getAccount(bytes);
    if (!account || !isTokenProgram(account.owner)) return undefined;
    const decimals = decodeMint(account.data)?.decimals;
    if (decimals !== undefined) this.decimalsOfMint.set(mint, decimals);
    return decimals;
  }

  /** Runs a transaction; returns its record when it landed, throws TransactionRejected when not. */
  sendTransaction(tx: WireTransaction, preflight: boolean): TransactionRecord {
    this.assertOpen();
    const signatureBytes = tx.signatures[0] as Uint8Array;
    const signature = encodeBase58(signatureBytes);
    const blockhashValid = this.isBlockhashValid(tx.recentBlockhash);
    if (this.alreadyProcessed(signatureBytes, signature, blockhashValid))
      throw new TransactionRejected('AlreadyProcessed', [], 0n);
    if (!blockhashValid) throw new TransactionRejected('BlockhashNotFound', [], 0n);

    const keys = this.resolveKeys(tx);
    const pre = this.captureBalances(keys);
    const payerBytes = tx.staticKeys[0] as Uint8Array;
    const payerBefore = pre.lamports[0] as bigint;

    for (let i = 0; i < keys.all.length; i++)
      if (keys.writable[i]) this.notePreImage(keys.all[i] as string, keys.bytes[i] as Uint8Array);
    const result = this.svm.sendVersionedTransaction(tx.bytes);
    const failed = result instanceof FailedTransactionMetadata;
    const meta: TransactionMetadata = failed ? result.meta() : result;
    const err = failed ? transactionErrorJson(result) : null;
    // A failed transaction landed iff it paid its fee; otherwise it was dropped before execution.
    const landed = !failed || this.svm.getBalance(payerBytes) !== payerBefore;
    if (err !== null && (!landed || preflight)) {
      // Preflight would have caught it before broadcast, so undo the fee LiteSVM charged (a failed
      // transaction changes nothing else of its fee payer).
      const charged = landed ? this.svm.getAccount(payerBytes) : null;
      if (charged) {
        this.svm.setAccount(
          payerBytes,
          new Account(
            payerBefore,
            charged.data(),
            charged.owner(),
            charged.executable(),
            charged.rentEpoch(),
          ),
        );
      }
      throw new TransactionRejected(err, mainnetMemoLogs(meta.logs()), meta.computeUnitsConsumed());
    }

    const inner = readInnerInstructions(meta);
    const invoked = new Set(keys.programIndexes);
    for (const list of inner) for (const ix of list) invoked.add(ix.programIdIndex);
    const invokedRaw = [...invoked].map((i) => keys.raw[i] as string);
    const touchesToken = invokedRaw.some((raw) => TOKEN_PROGRAMS.has(raw));
    // Only a token program changes token accounts: otherwise lamports are all that can differ.
    if (touchesToken) {
      for (const raw of keys.raw) this.tokenAccountCache.delete(raw);
      keys.all.forEach((key, i) => {
        if (keys.writable[i]) this.decimalsOfMint.delete(key);
      });
    }
    const post = touchesToken ? this.captureBalances(keys) : this.capturePostLamports(keys, pre);
    const mayReturnData = invokedRaw.some((raw) => !WITHOUT_RETURN_DATA.has(raw));
    const block = this.latestBlock();
    const fee = transactionFee(tx);
    this.seq += 1;
    const record: TransactionRecord = {
      seq: this.seq,
      signature,
      slot: block.slot,
      blockTime: block.blockTime,
      wire: tx.bytes,
      err,
      memo: extractMemo(tx),
      meta: this.buildMeta(fee.fee, keys, pre, post, inner, meta, mayReturnData),
      accountKeys: keys.all,
    };
    this.ledger.addTransaction(record);
    this.recentSignatures.add(signatureBytes, record.slot);
    const writable = keys.all.filter((_, i) => keys.writable[i]);
    this.notePriorityFee(block.slot, fee.computeUnitPrice, writable);
    for (let i = 0; i < keys.all.length; i++) {
      if (keys.writable[i]) this.changedAccounts.set(keys.all[i] as string, keys.bytes[i] as Uint8Array);
    }
    for (const listener of this.listeners) listener.onTransaction(record, writable);
    return record;
  }

  simulateTransaction(
    tx: WireTransaction,
    options: { sigVerify: boolean; replaceRecentBlockhash: boolean; accounts: readonly Uint8Array[] },
  ): SimulationResult {
    this.assertOpen();
    const keys = this.resolveKeys(tx);
    const pre = this.captureBalances(keys);
    const fee = transactionFee(tx).fee;
    const rejected = (err: TransactionErrorJson): SimulationResult => ({
      err,
      logs: [],
      unitsConsumed: 0n,
      accounts: null,
      returnData: null,
      fee,
      preBalances: pre.lamports,
      postBalances: pre.lamports,
      innerInstructions: null,
      accountKeys: keys.all,
      preTokenBalances: pre.tokens,
      postTokenBalances: pre.tokens,
      loadedAddresses: keys.loaded,
    });
    const signatureBytes = tx.signatures[0] as Uint8Array;
    const blockhashValid = this.isBlockhashValid(tx.recentBlockhash);
    if (this.alreadyProcessed(signatureBytes, encodeBase58(signatureBytes), blockhashValid))
      return rejected('AlreadyProcessed');
    if (!options.replaceRecentBlockhash && !blockhashValid) return rejected('BlockhashNotFound');
    this.svm.setSigverify(options.sigVerify);
    let result: ReturnType<LiteSvm['simulateVersionedTransaction']>;
    try {
      result = this.svm.simulateVersionedTransaction(tx.bytes);
    } finally {
      this.svm.setSigverify(true);
    }
    const meta = result.meta();
    const returned = meta.returnData();
    const returnData =
      returned.data().length > 0
        ? { programId: encodeBase58(returned.programId()), data: returned.data() }
        : null;
    let accounts: (AccountSnapshot | null)[] | null = null;
    let postBalances = pre.lamports;
    let postTokenBalances = pre.tokens;
    if (!(result instanceof FailedTransactionMetadata)) {
      const postAccounts = new Map<string, AccountSnapshot>();
      for (const entry of result.postAccounts()) {
        const account = entry.account();
        postAccounts.set(encodeBase58(entry.address), {
          lamports: account.lamports(),
          data: account.data(),
          owner: encodeBase58(account.owner()),
          executable: account.executable(),
          rentEpoch: account.rentEpoch(),
        });
      }
      const lookup = (address: Uint8Array) =>
        postAccounts.get(encodeBase58(address)) ?? this.getAccount(address);
      accounts = options.accounts.length > 0 ? options.accounts.map(lookup) : null;
      postBalances = keys.all.map((key, i) => postAccounts.get(key)?.lamports ?? (pre.lamports[i] as bigint));
      postTokenBalances = this.simulatedTokenBalances(keys, postAccounts);
    }
    return {
      err: result instanceof FailedTransactionMetadata ? transactionErrorJson(result) : null,
      logs: mainnetMemoLogs(meta.logs()),
      unitsConsumed: meta.computeUnitsConsumed(),
      accounts,
      returnData,
      fee,
      preBalances: pre.lamports,
      postBalances,
      innerInstructions: readInnerInstructions(meta),
      accountKeys: keys.all,
      preTokenBalances: pre.tokens,
      postTokenBalances,
      loadedAddresses: keys.loaded,
    };
  }

  /** Token balances of the keys after a simulation: its post-execution accounts, else the current ones. */
  private simulatedTokenBalances(
    keys: ResolvedKeys,
    post: ReadonlyMap<string, AccountSnapshot>,
  ): TokenBalance[] {
    const tokens: TokenBalance[] = [];
    keys.all.forEach((key, index) => {
      if (keys.programIndexes.has(index)) return;
      const account = post.get(key) ?? this.getAccount(keys.bytes[index] as Uint8Array);
      if (!account || !isTokenProgram(account.owner)) return;
      const state = decodeTokenAccount(account.data);
      const decimals = state && this.mintDecimals(state.mint);
      if (!state || decimals === undefined) return;
      tokens.push({
        accountIndex: index,
        mint: state.mint,
        owner: state.owner,
        programId: account.owner,
        amount: state.amount,
        decimals,
        ...this.scaledTokenAmount(
          decodeBase58(account.owner) as Uint8Array,
          state.mint,
          state.amount,
          decimals,
        ),
      });
    });
    return tokens;
  }

  /** Status of a landed transaction; without `searchHistory` only the last STATUS_CACHE_SLOTS slots. */
  signatureStatus(signature: string, searchHistory: boolean): SignatureStatus | null {
    const status = this.ledger.status(signature);
    // The open slot is not committed yet: nothing in it is reported (see the invariants above).
    if (!status || status.slot >= this.slot) return null;
    if (!searchHistory && status.slot < this.slot - STATUS_CACHE_SLOTS) return null;
    return { slot: status.slot, err: status.err, ...this.commitmentOf(status.slot) };
  }

  commitmentOf(slot: number): { confirmations: number | null; confirmationStatus: Commitment } {
    const current = this.slot;
    // `finalizedDepth` blocks on top (a young chain's finalized slot is its first, yet not final), or
    // at or below the floor a drop kept.
    const deep = this.recentBlocks.length > this.options.finalizedDepth;
    if ((deep && slot <= this.slotAt('finalized')) || slot <= this.finalizedFloor)
      return { confirmations: null, confirmationStatus: 'finalized' };
    // Blocks on top of it (slot numbers may have gaps where slots were dropped).
    const block = this.recentBlocks.find((b) => b.slot === slot);
    return {
      confirmations: block ? this.latestBlock().blockHeight - block.blockHeight : current - slot,
      confirmationStatus: slot <= current - 1 ? 'confirmed' : 'processed',
    };
  }

  reachedCommitment(slot: number, commitment: Commitment): boolean {
    return slot <= this.slotAt(commitment) && (commitment === 'processed' || slot < this.slot);
  }

  transaction(signature: string): TransactionRecord | undefined {
    return this.ledger.transaction(signature);
  }

  /** Signature and error of every transaction in `slot`, without loading their meta. */
  statusesInSlot(slot: number): { signature: string; err: TransactionErrorJson | null }[] {
    return this.ledger.statusesInSlot(slot);
  }

  transactionsInSlot(slot: number): TransactionRecord[] {
    return this.ledger.transactionsInSlot(slot);
  }

  block(slot: number): BlockRecord | undefined {
    return this.recentBlocks.find((b) => b.slot === slot) ?? this.ledger.block(slot);
  }

  signaturesForAddress(
    address: Uint8Array,
    before: string | undefined,
    until: string | undefined,
    limit: number,
    commitment: Commitment,
  ) {
    // An unknown `before` has nothing older than it that we could name: answer nothing (as Agave).
    const beforeSeq = before === undefined ? Number.MAX_SAFE_INTEGER : this.transaction(before)?.seq;
    if (beforeSeq === undefined) return [];
    const untilSeq = until === undefined ? 0 : (this.transaction(until)?.seq ?? 0);
    // Bounded by the commitment's slot inside the query, so `limit` counts only what is answered.
    const maxSlot = Math.min(this.slotAt(commitment), this.slot - 1);
    return this.ledger.signaturesForAddress(encodeBase58(address), beforeSeq, untilSeq, maxSlot, limit);
  }

  /**
   * Ends the open slot and `count - 1` empty ones, commits them durably with every account they
   * changed, then opens the next slot and reports the new ones (the slot clock calls this with 1).
   * A failed commit throws before anything is reported: the caller must stop (the slot clock's
   * throw ends the process), as no later slot may be reported over a lost one.
   */
  advanceSlots(count: number): void {
    this.assertOpen();
    for (let i = 0; i < count; i++) {
      this.ledger.addBlock(this.latestBlock());
      this.startSlot(this.slot + 1);
    }
    this.commit();
    this.samplePerformance();
    for (let slot = this.slot - count + 1; slot <= this.slot; slot++) {
      for (const listener of this.listeners) listener.onSlot(slot);
    }
  }

  /**
   * Test hook: drops the newest `count` ended slots and the open slot, as a cluster abandons a fork
   * (a `confirmed` block can be skipped). Their blocks and transactions are removed, every account
   * they changed goes back to its state at the end of the newest remaining slot (the pre-images,
   * newest slot first), their signatures are forgotten (they may land again) and their blockhashes
   * leave the window, all durably in one SQLite transaction. The next slot's number continues
   * after the highest dropped one, its block height is the remaining parent's plus one (so the
   * processed block height goes back by `count`), and the finalized slot stays where it was.
   * Refused (DropSlotsRefused, nothing changed) without `testHooks`, on a public cluster's genesis,
   * for slots before this process started (their pre-images are not kept), and for a `count`
   * that would reach the finalized slot. Returns the dropped slots, oldest first.
   */
  dropSlots(count: number): number[] {
    this.assertOpen();
    if (!this.testHooks) throw new DropSlotsRefused('test hooks are off (start the localnet with testHooks)');
    if (PUBLIC_GENESIS_HASHES.has(this.genesisHash))
      throw new DropSlotsRefused('refused on the genesis of a public Solana cluster');
    if (!Number.isSafeInteger(count) || count < 1)
      throw new DropSlotsRefused('the number of slots to drop must be a positive integer');
    const ended = this.recentBlocks.slice(0, -1);
    const finalized = this.slotAt('finalized');
    const dropped = ended.slice(-count);
    const first = dropped[0];
    if (dropped.length < count || first === undefined || first.slot <= finalized)
      throw new DropSlotsRefused(
        `dropping ${count} slot(s) would reach the finalized slot ${finalized} (finalized never moves back)`,
      );
    if (first.slot < this.rollbackFrom)
      throw new DropSlotsRefused(
        `slot ${first.slot} ended before this localnet started: it cannot be dropped`,
      );
    const parent = ended[ended.length - 1 - count] as BlockRecord;
    const highest = this.slot;
    // Newest slot first: an account ends with its pre-image in the oldest dropped slot that changed it.
    const restored = new Map<string, AccountSnapshot | null>();
    for (const slot of [highest, ...dropped.map((b) => b.slot).reverse()])
      for (const [address, account] of this.preImages.get(slot) ?? []) restored.set(address, account);
    for (const [name] of SLOT_SYSVARS) restored.delete(name);
    this.ledger.setMeta('next_slot', String(highest + 1));
    this.ledger.setMeta('finalized_floor', String(finalized));
    this.ledger.dropAfter(parent.slot, restored);

    for (const [address, account] of restored) {
      const key = decodeBase58(address) as Uint8Array;
      this.svm.setAccount(
        key,
        account === null
          ? new Account(0n, new Uint8Array(), new Uint8Array(32), false, 0n)
          : new Account(
              account.lamports,
              account.data,
              decodeBase58(account.owner) as Uint8Array,
              account.executable,
              account.rentEpoch,
            ),
      );
    }
    this.finalizedFloor = finalized;
    this.seq = this.ledger.lastSeq();
    this.changedAccounts = new Map();
    for (const slot of this.preImages.keys()) if (slot > parent.slot) this.preImages.delete(slot);
    for (const slot of this.minPriorityFeeBySlot.keys())
      if (slot > parent.slot) this.minPriorityFeeBySlot.delete(slot);
    this.recentSignatures.forgetAfter(parent.slot);
    this.window.forgetAbove(parent.blockHeight);
    this.tokenAccountCache.clear();
    this.decimalsOfMint.clear();
    this.builtins = undefined;
    // startSlot adds the parent again.
    this.slotHashes = this.slotHashes.filter((entry) => entry.slot < BigInt(parent.slot));
    this.recentBlocks = this.ledger.recentBlocks(this.options.finalizedDepth + 2).reverse();
    this.startSlot(highest + 1);
    for (const listener of this.listeners) listener.onSlot(this.slot);
    return dropped.map((b) => b.slot).concat(highest);
  }

  /** Stops the clock and commits the open slot, so a restart continues after it. Idempotent. */
  close(): void {
    if (this.closed) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.ledger.addBlock(this.latestBlock());
    this.commit();
    this.ledger.close();
    this.closed = true;
  }

  private samplePerformance(): void {
    const now = Date.now();
    const last = this.lastSample;
    if (last === undefined) {
      this.lastSample = { at: now, slot: this.slot, seq: this.seq };
      return;
    }
    if (now - last.at < PERFORMANCE_SAMPLE_SECONDS * 1000) return;
    const transactions = this.seq - last.seq;
    this.samples.unshift({
      slot: this.slot,
      numTransactions: transactions,
      numSlots: this.slot - last.slot,
      samplePeriodSecs: PERFORMANCE_SAMPLE_SECONDS,
      // No vote transactions here.
      numNonVoteTransactions: transactions,
    });
    if (this.samples.length > PERFORMANCE_SAMPLES_KEPT) this.samples.pop();
    this.lastSample = { at: now, slot: this.slot, seq: this.seq };
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the localnet chain is closed');
  }

  /** Commits the buffered blocks and transactions with the current state of every changed account. */
  private commit(): void {
    const accounts = new Map<string, AccountSnapshot | null>();
    for (const [address, key] of this.changedAccounts) accounts.set(address, this.getAccount(key));
    this.ledger.commit(accounts);
    this.changedAccounts = new Map();
  }

  private startSlot(slot: number): void {
    const parent = this.recentBlocks.length > 0 ? this.latestBlock() : undefined;
    const previous = parent
      ? (decodeBase58(parent.blockhash) as Uint8Array)
      : (decodeBase58(this.genesisHash) as Uint8Array);
    const slotBytes = Buffer.alloc(8);
    slotBytes.writeBigUInt64LE(BigInt(slot));
    const hash = createHash('sha256').update(previous).update(slotBytes).digest();
    const blockTime = Math.floor(Date.now() / 1000);
    const block: BlockRecord = {
      slot,
      blockhash: encodeBase58(hash),
      previousBlockhash: encodeBase58(previous),
      parentSlot: parent ? parent.slot : slot,
      blockHeight: parent ? parent.blockHeight + 1 : 0,
      blockTime,
    };
    if (parent) {
      this.slotHashes.unshift({ slot: BigInt(parent.slot), hash: parent.blockhash });
      if (this.slotHashes.length > SLOT_HASHES_MAX_ENTRIES) this.slotHashes.pop();
    }
    this.recentBlocks.push(block);
    if (this.recentBlocks.length > this.options.finalizedDepth + 2) this.recentBlocks.shift();
    // The sysvars change as the slot starts: keep the parent slot's, for reads at confirmed/finalized.
    if (parent) for (const [name, key] of SLOT_SYSVARS) this.notePreImage(name, key);
    this.svm.setSlotHashes(this.slotHashes);
    // Reads at finalized (and dropSlots) need the pre-images of the slots after the finalized one.
    const finalized = this.slotAt('finalized');
    for (const old of this.preImages.keys()) if (old <= finalized) this.preImages.delete(old);
    if (this.rollbackFrom > slot) this.rollbackFrom = slot;
    this.window.push(hash, block.blockHeight, slot);
    // A signature whose blockhash is still valid landed no earlier than that blockhash's slot (slot
    // numbers may have gaps, so not `slot - MAX_PROCESSING_AGE`).
    this.recentSignatures.forgetBefore(this.window.oldestSlot() ?? slot);
    this.svm.setClock(
      new Clock(
        BigInt(slot),
        BigInt(blockTime),
        BigInt(Math.floor(slot / SLOTS_PER_EPOCH)),
        BigInt(Math.floor(slot / SLOTS_PER_EPOCH) + 1),
        BigInt(blockTime),
      ),
    );
  }

  // Lowest compute-unit price paid in each of the last MAX_PROCESSING_AGE slots, in the whole slot and
  // by each account written (Agave's prioritization fee cache).
  private readonly minPriorityFeeBySlot = new Map<number, { min: bigint; byAccount: Map<string, bigint> }>();

  private notePriorityFee(slot: number, price: bigint, writable: readonly string[]): void {
    let fees = this.minPriorityFeeBySlot.get(slot);
    if (fees === undefined) {
      fees = { min: price, byAccount: new Map() };
      this.minPriorityFeeBySlot.set(slot, fees);
      // First transaction of a slot: drop slots that left the window.
      for (const old of this.minPriorityFeeBySlot.keys()) {
        if (old <= slot - MAX_PROCESSING_AGE) this.minPriorityFeeBySlot.delete(old);
      }
    } else if (price < fees.min) fees.min = price;
    for (const account of writable) {
      const current = fees.byAccount.get(account);
      if (current === undefined || price < current) fees.byAccount.set(account, price);
    }
  }

  /**
   * getRecentPrioritizationFees: one entry per recent slot, 0 where nothing paid a priority fee. With
   * `accounts`, as Agave: the larger of the slot's lowest fee and the lowest fee paid by a transaction
   * writing each of them.
   */
  recentPrioritizationFees(accounts: readonly string[] = []): { slot: number; prioritizationFee: bigint }[] {
    const out: { slot: number; prioritizationFee: bigint }[] = [];
    for (let slot = Math.max(0, this.slot - MAX_PROCESSING_AGE + 1); slot <= this.slot; slot++) {
      const fees = this.minPriorityFeeBySlot.get(slot);
      let fee = fees?.min ?? 0n;
      for (const account of accounts) {
        const byAccount = fees?.byAccount.get(account);
        if (byAccount !== undefined && byAccount > fee) fee = byAccount;
      }
      out.push({ slot, prioritizationFee: fee });
    }
    return out;
  }

  /**
   * Whether this signature already landed, however long ago. While the transaction's blockhash is
   * valid only the recent set can hold it (see RecentSignatures); otherwise ask the ledger.
   */
  private alreadyProcessed(signatureBytes: Uint8Array, signature: string, blockhashValid: boolean): boolean {
    if (blockhashValid && !this.recentSignatures.mightContain(signatureBytes)) return false;
    return this.ledger.hasSignature(signature);
  }

  /** Static keys then keys loaded from address lookup tables (writable first), as Agave orders them. */
  private resolveKeys(tx: WireTransaction): ResolvedKeys {
    const bytes: Uint8Array[] = [...tx.staticKeys];
    const programIndexes = new Set(tx.instructions.map((ix) => ix.programIdIndex));
    const writable = bytes.map((_, i) => isStaticWritable(tx, i) && !programIndexes.has(i));
    const loadedWritable: Uint8Array[] = [];
    const loadedReadonly: Uint8Array[] = [];
    for (const lookup of tx.lookups) {
      const table = this.svm.getAccount(lookup.accountKey);
      const addresses = table && rawKey(table.owner()) === ADDRESS_LOOKUP_TABLE ? table.data() : undefined;
      const collect = (indexes: Uint8Array, into: Uint8Array[]) => {
        for (const index of indexes) {
          const start = LOOKUP_TABLE_HEADER + index * 32;
          if (addresses && start + 32 <= addresses.length) into.push(addresses.subarray(start, start + 32));
        }
      };
      collect(lookup.writableIndexes, loadedWritable);
      collect(lookup.readonlyIndexes, loadedReadonly);
    }
    bytes.push(...loadedWritable, ...loadedReadonly);
    writable.push(...loadedWritable.map(() => true), ...loadedReadonly.map(() => false));
    const raw = bytes.map(rawKey);
    const all = bytes.map((key, i) => this.addressNames.name(raw[i] as string, key));
    const loadedFrom = tx.staticKeys.length;
    return {
      bytes,
      raw,
      all,
      writable,
      programIndexes,
      loaded: {
        writable: all.slice(loadedFrom, loadedFrom + loadedWritable.length),
        readonly: all.slice(loadedFrom + loadedWritable.length),
      },
    };
  }

  /** Lamports of every key, and token balances of the keys that are token accounts. */
  private captureBalances(keys: ResolvedKeys) {
    const lamports: bigint[] = [];
    const tokens: TokenBalance[] = [];
    for (let index = 0; index < keys.bytes.length; index++) {
      const bytes = keys.bytes[index] as Uint8Array;
      const id = keys.raw[index] as string;
      // Program accounts are never token accounts (and reading them copies their data); known
      // non-token accounts need only their lamports.
      if (keys.programIndexes.has(index) || this.tokenAccountCache.get(id) === false) {
        lamports.push(this.svm.getBalance(bytes) ?? 0n);
        continue;
      }
      const account = this.svm.getAccount(bytes);
      lamports.push(account?.lamports() ?? 0n);
      if (!account) continue;
      const owner = account.owner();
      const isToken = TOKEN_PROGRAMS.has(rawKey(owner));
      this.rememberTokenAccount(id, isToken);
      if (!isToken) continue;
      const state = decodeTokenAccount(account.data());
      const decimals = state && this.mintDecimals(state.mint);
      if (state && decimals !== undefined) {
        tokens.push({
          accountIndex: index,
          mint: state.mint,
          owner: state.owner,
          programId: encodeBase58(owner),
          amount: state.amount,
          decimals,
          ...this.scaledTokenAmount(owner, state.mint, state.amount, decimals),
        });
      }
    }
    return { lamports, tokens };
  }

  /**
   * A Token-2022 balance of a mint with interest or a multiplier, rendered with the Clock of this slot
   * (Agave renders transaction token balances at execution); nothing for other mints.
   */
  private scaledTokenAmount(owner: Uint8Array, mint: string, amount: bigint, decimals: number) {
    if (rawKey(owner) !== TOKEN_2022_RAW) return {};
    const account = this.getAccount(decodeBase58(mint) as Uint8Array);
    const ui = account && scaledUiAmounts(account.data, decimals, BigInt(this.latestBlock().blockTime));
    return ui ? { ui: ui(amount) } : {};
  }

  /**
   * Lamports after a transaction that invoked no token program. Invariant: the runtime refuses
   * any lamport change to an account the message does not mark writable (and only demotes
   * writable keys, never promotes read-only ones), so only writable keys are read again.
   */
  private capturePostLamports(keys: ResolvedKeys, pre: ReturnType<Chain['captureBalances']>) {
    const lamports = keys.bytes.map((key, i) =>
      keys.writable[i] ? (this.svm.getBalance(key) ?? 0n) : (pre.lamports[i] as bigint),
    );
    return { lamports, tokens: pre.tokens };
  }

  /**
   * Whether an account is owned by a token program, by raw key. Invariant: an account's owner can
   * become or stop being a token program only in a transaction that invokes a token program (the
   * System program can assign an account to one, but not initialise it), so entries are dropped
   * for the keys of exactly those transactions, and by `setAccount`.
   */
  private readonly tokenAccountCache = new Map<string, boolean>();

  private rememberTokenAccount(id: string, isToken: boolean): void {
    if (this.tokenAccountCache.size >= TOKEN_ACCOUNT_CACHE_LIMIT) this.tokenAccountCache.clear();
    this.tokenAccountCache.set(id, isToken);
  }

  private buildMeta(
    fee: bigint,
    keys: ResolvedKeys,
    pre: ReturnType<Chain['captureBalances']>,
    post: ReturnType<Chain['captureBalances']>,
    innerInstructions: InnerInstructionRecord[][],
    meta: TransactionMetadata,
    mayReturnData: boolean,
  ): TransactionMeta {
    const returned = mayReturnData ? meta.returnData() : undefined;
    return {
      fee,
      preBalances: pre.lamports,
      postBalances: post.lamports,
      preTokenBalances: pre.tokens,
      postTokenBalances: post.tokens,
      logMessages: mainnetMemoLogs(meta.logs()),
      innerInstructions,
      computeUnitsConsumed: meta.computeUnitsConsumed(),
      loadedAddresses: keys.loaded,
      returnData: returnDataOf(returned),
    };
  }
}

function returnDataOf(returned: ReturnType<TransactionMetadata['returnData']> | undefined) {
  const data = returned?.data();
  return returned && data && data.length > 0 ? { programId: encodeBase58(returned.programId()), data } : null;
}

function readInnerInstructions(meta: TransactionMetadata): InnerInstructionRecord[][] {
  return meta.innerInstructions().map((list) =>
    list.map((inner) => {
      const ix = inner.instruction();
      return {
        programIdIndex: ix.programIdIndex(),
        accounts: [...ix.accounts()],
        data: ix.data(),
        stackHeight: inner.stackHeight(),
      };
    }),
  );
}

/** Agave's memo column: "[byte length] text" for each memo instruction, joined with "; ". */
function extractMemo(tx: WireTransaction): string | null {
  const memos: string[] = [];
  for (const ix of tx.instructions) {
    const program = tx.staticKeys[ix.programIdIndex];
    if (program && MEMO_PROGRAM_KEYS.has(rawKey(program))) {
      memos.push(`[${ix.data.length}] ${Buffer.from(ix.data).toString('utf8')}`);
    }
  }
  return memos.length > 0 ? memos.join('; ') : null;
}

function snapshotOf(account: Account | null): AccountSnapshot | null {
  if (account === null) return null;
  const lamports = account.lamports();
  // Agave treats a zero-lamport account as absent.
  if (lamports === 0n) return null;
  return {
    lamports,
    data: account.data(),
    owner: encodeBase58(account.owner()),
    executable: account.executable(),
    rentEpoch: account.rentEpoch(),
  };
}

/** Programs that own the accounts users create (for the import of a version-1 snapshot). */
const USER_ACCOUNT_OWNERS = [
  '11111111111111111111111111111111',
  TOKEN_PROGRAM,
  TOKEN_2022_PROGRAM,
  'AddressLookupTab1e1111111111111111111111111',
  'BPFLoaderUpgradeab1e11111111111111111111111',
];

/**
 * Version 1 kept the accounts in a LiteSVM snapshot file; version 2 keeps them in the ledger. The
 * import stores every account the snapshot holds that a fresh LiteSVM does not create itself: those
 * owned by the programs users create accounts with, and every address a transaction named.
 */
function importSnapshot(ledger: LedgerStore, path: string): void {
  if (!existsSync(path)) throw new Error(`${path}: a version-1 ledger without its account snapshot`);
  const old = LiteSvm.loadFromFile(path);
  const fresh = new LiteSvm();
  const addresses = ledger.addressesInTransactions();
  for (const owner of USER_ACCOUNT_OWNERS) {
    for (const entry of old.getProgramAccounts(decodeBase58(owner) as Uint8Array))
      addresses.add(encodeBase58(entry.address));
  }
  const accounts = new Map<string, AccountSnapshot | null>();
  for (const address of addresses) {
    const key = decodeBase58(address) as Uint8Array;
    if (fresh.getAccount(key) !== null) continue;
    const account = snapshotOf(old.getAccount(key));
    if (account) accounts.set(address, account);
  }
  ledger.setMeta('schema_version', '2');
  ledger.commit(accounts);
  unlinkSync(path);
}
