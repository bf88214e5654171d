// The durable chain: blocks, transactions, the signatures-by-address index and the account state,
// in SQLite (a file in the ledger directory, or in memory when there is none).
//
// Writes are buffered and committed once per slot in one SQLite transaction that holds the slot's
// block, its transactions and every account they changed (`commit`), fsynced before it returns:
// after a crash at any moment the file holds whole slots — each transaction it knows with its
// effects on accounts, and no effect of a transaction it does not know. Reads consult the buffer
// first; `Chain` decides what of the open slot it reports.
import Database from 'better-sqlite3';
import type { AccountSnapshot } from './account-snapshot.ts';
import type { TransactionErrorJson } from './transaction-error.ts';
import type { BlockRecord, TokenBalance, TransactionMeta, TransactionRecord } from './transaction-record.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blocks (
  slot INTEGER PRIMARY KEY, blockhash TEXT NOT NULL, previous_blockhash TEXT NOT NULL,
  parent_slot INTEGER NOT NULL, block_height INTEGER NOT NULL, block_time INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS transactions (
  seq INTEGER PRIMARY KEY, signature_key INTEGER NOT NULL, signature TEXT NOT NULL, slot INTEGER NOT NULL,
  block_time INTEGER NOT NULL, err TEXT, memo TEXT, wire BLOB NOT NULL, meta TEXT NOT NULL, account_keys TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS transactions_by_signature ON transactions (signature_key);
CREATE INDEX IF NOT EXISTS transactions_by_slot ON transactions (slot, seq);
-- Static keys are unique per transaction (sanitised) but a lookup-table key may repeat one,
-- hence INSERT OR IGNORE into this table.
CREATE TABLE IF NOT EXISTS address_signatures (
  address_key INTEGER NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (address_key, seq)) WITHOUT ROWID;
-- The account state as of the last committed slot: every account a transaction or the operator
-- changed (the programs and sysvars LiteSVM creates itself are not stored). u64 values as text.
CREATE TABLE IF NOT EXISTS accounts (
  address TEXT PRIMARY KEY, lamports TEXT NOT NULL, data BLOB NOT NULL, owner TEXT NOT NULL,
  executable INTEGER NOT NULL, rent_epoch TEXT NOT NULL);
`;
/**
 * Bumped whenever SCHEMA changes incompatibly; a ledger of another version is refused, not misread.
 * Version 1 kept accounts in a separate snapshot file (`accounts.bin`); `Chain.open` imports it once.
 */
const SCHEMA_VERSION = '2';
export const SCHEMA_VERSION_WITH_SNAPSHOT = '1';

/**
 * A 53-bit hash of a base58 key, the indexed column for signatures and addresses: integer index
 * entries are a quarter the size of text ones, which halves the cost of each insert. Distinct keys
 * may share a hash, so every lookup also compares the full text.
 */
export function keyHash(text: string): number {
  let a = 0x811c9dc5;
  let b = 0x01000193;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  return (a >>> 0) * 0x200000 + (b >>> 11);
}

interface TransactionRow {
  seq: number;
  signature_key: number;
  signature: string;
  slot: number;
  block_time: number;
  err: string | null;
  memo: string | null;
  wire: Buffer;
  meta: string;
  account_keys: string;
}

interface BlockRow {
  slot: number;
  blockhash: string;
  previous_blockhash: string;
  parent_slot: number;
  block_height: number;
  block_time: number;
}

/** Signature-for-address answer row: enough for getSignaturesForAddress without loading meta. */
export interface SignatureInfo {
  readonly seq: number;
  readonly signature: string;
  readonly slot: number;
  readonly blockTime: number;
  readonly err: TransactionErrorJson | null;
  readonly memo: string | null;
}

interface AccountRow {
  address: string;
  lamports: string;
  data: Buffer;
  owner: string;
  executable: number;
  rent_epoch: string;
}

export class LedgerStore {
  private readonly db: Database.Database;
  private pendingTransactions = new Map<string, TransactionRecord>();
  private pendingBlocks: BlockRecord[] = [];
  private pendingMeta = new Map<string, string>();
  /** Schema version found in an existing file (undefined for a new one). */
  readonly storedVersion: string | undefined;
  private readonly statements;
  /** Address index inserts by number of rows (a transaction has at most 256 account keys). */
  private readonly insertAddressRows = new Map<number, Database.Statement<[number[]]>>();

  /** `path` is a file, or `:memory:`. */
  constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    // FULL: every slot's commit is fsynced before the slot is reported, so not even a power cut
    // loses a slot a client was told about. One fsync per slot (400 ms), not per transaction.
    this.db.pragma('synchronous = FULL');
    this.db.exec(SCHEMA);
    const version = this.db
      .prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'schema_version'")
      .get();
    this.storedVersion = version?.value;
    if (version === undefined) {
      this.db.prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?)").run(SCHEMA_VERSION);
    } else if (version.value !== SCHEMA_VERSION && version.value !== SCHEMA_VERSION_WITH_SNAPSHOT) {
      throw new Error(`${path}: ledger schema ${version.value} is not the supported ${SCHEMA_VERSION}`);
    }
    this.statements = {
      getMeta: this.db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?'),
      setMeta: this.db.prepare(
        'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
      ),
      insertBlock: this.db.prepare(
        'INSERT OR REPLACE INTO blocks VALUES (@slot, @blockhash, @previousBlockhash, @parentSlot, @blockHeight, @blockTime)',
      ),
      insertTransaction: this.db.prepare('INSERT INTO transactions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
      hasSignature: this.db.prepare<[number, string], { one: number }>(
        'SELECT 1 AS one FROM transactions WHERE signature_key = ? AND signature = ?',
      ),
      transactionBySignature: this.db.prepare<[number, string], TransactionRow>(
        'SELECT * FROM transactions WHERE signature_key = ? AND signature = ?',
      ),
      statusBySignature: this.db.prepare<[number, string], { slot: number; err: string | null }>(
        'SELECT slot, err FROM transactions WHERE signature_key = ? AND signature = ?',
      ),
      statusesBySlot: this.db.prepare<[number], { signature: string; err: string | null }>(
        'SELECT signature, err FROM transactions WHERE slot = ? ORDER BY seq',
      ),
      transactionsBySlot: this.db.prepare<[number], TransactionRow>(
        'SELECT * FROM transactions WHERE slot = ? ORDER BY seq',
      ),
      signaturesSince: this.db.prepare<[number], { signature: string; slot: number }>(
        'SELECT signature, slot FROM transactions WHERE slot >= ?',
      ),
      lastSeq: this.db.prepare<[], { seq: number | null }>('SELECT MAX(seq) AS seq FROM transactions'),
      block: this.db.prepare<[number], BlockRow>('SELECT * FROM blocks WHERE slot = ?'),
      recentBlocks: this.db.prepare<[number], BlockRow>('SELECT * FROM blocks ORDER BY slot DESC LIMIT ?'),
      blocksInRange: this.db.prepare<[number, number], BlockRow>(
        'SELECT * FROM blocks WHERE slot >= ? AND slot <= ? ORDER BY slot',
      ),
      slotsInRange: this.db.prepare<[number, number, number], { slot: number }>(
        'SELECT slot FROM blocks WHERE slot >= ? AND slot <= ? ORDER BY slot LIMIT ?',
      ),
      slotAtDepth: this.db.prepare<[number, number], { slot: number }>(
        'SELECT slot FROM blocks WHERE slot <= ? ORDER BY slot DESC LIMIT 1 OFFSET ?',
      ),
      transactionsAfter: this.db.prepare<[number], { seq: number; account_keys: string }>(
        'SELECT seq, account_keys FROM transactions WHERE slot > ?',
      ),
      deleteAddressSignature: this.db.prepare(
        'DELETE FROM address_signatures WHERE address_key = ? AND seq = ?',
      ),
      deleteTransactionsAfter: this.db.prepare('DELETE FROM transactions WHERE slot > ?'),
      deleteBlocksAfter: this.db.prepare('DELETE FROM blocks WHERE slot > ?'),
      signaturesForAddress: this.db.prepare<[number, number, number, number, number], TransactionRow>(
        `SELECT t.* FROM address_signatures a JOIN transactions t ON t.seq = a.seq
         WHERE a.address_key = ? AND a.seq < ? AND a.seq > ? AND t.slot <= ? ORDER BY a.seq DESC LIMIT ?`,
      ),
      upsertAccount: this.db.prepare(
        `INSERT INTO accounts VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(address) DO UPDATE SET
         lamports = excluded.lamports, data = excluded.data, owner = excluded.owner,
         executable = excluded.executable, rent_epoch = excluded.rent_epoch`,
      ),
      deleteAccount: this.db.prepare('DELETE FROM accounts WHERE address = ?'),
      // Programs last: an upgradeable program is loaded from its program-data account.
      accounts: this.db.prepare<[], AccountRow>('SELECT * FROM accounts ORDER BY executable'),
      accountKeys: this.db.prepare<[], { account_keys: string }>('SELECT account_keys FROM transactions'),
      lamports: this.db.prepare<[], { lamports: string }>('SELECT lamports FROM accounts'),
      hasAccount: this.db.prepare<[string], { one: number }>(
        'SELECT 1 AS one FROM accounts WHERE address = ?',
      ),
      largestAccounts: this.db.prepare<[number], { address: string; lamports: string }>(
        'SELECT address, lamports FROM accounts ORDER BY CAST(lamports AS INTEGER) DESC, address LIMIT ?',
      ),
    };
  }

  getMeta(key: string): string | undefined {
    return this.pendingMeta.get(key) ?? this.statements.getMeta.get(key)?.value;
  }

  /** Buffered like the rest: written by the next `commit`. */
  setMeta(key: string, value: string): void {
    this.pendingMeta.set(key, value);
  }

  /** The committed account state (programs last), to rebuild LiteSVM at start. */
  *accounts(): Generator<{ address: string; account: AccountSnapshot }> {
    for (const row of this.statements.accounts.iterate()) {
      yield {
        address: row.address,
        account: {
          lamports: BigInt(row.lamports),
          data: new Uint8Array(row.data),
          owner: row.owner,
          executable: row.executable === 1,
          rentEpoch: BigInt(row.rent_epoch),
        },
      };
    }
  }

  /** Sum of the lamports of every committed account. */
  totalLamports(): bigint {
    let total = 0n;
    for (const row of this.statements.lamports.iterate()) total += BigInt(row.lamports);
    return total;
  }

  /** Whether the address has a committed account (one a transaction or the operator stored). */
  hasAccount(address: string): boolean {
    return this.statements.hasAccount.get(address) !== undefined;
  }

  /** The committed accounts holding the most lamports, most first. */
  largestAccounts(limit: number): { address: string; lamports: bigint }[] {
    return this.statements.largestAccounts
      .all(limit)
      .map((row) => ({ address: row.address, lamports: BigInt(row.lamports) }));
  }

  /** Every address a stored transaction named (for the one-time import of a version-1 snapshot). */
  addressesInTransactions(): Set<string> {
    const out = new Set<string>();
    for (const row of this.statements.accountKeys.iterate())
      for (const key of row.account_keys.split(',')) out.add(key);
    return out;
  }

  lastSeq(): number {
    let last = this.statements.lastSeq.get()?.seq ?? 0;
    for (const record of this.pendingTransactions.values()) last = Math.max(last, record.seq);
    return last;
  }

  addBlock(block: BlockRecord): void {
    this.pendingBlocks.push(block);
  }

  addTransaction(record: TransactionRecord): void {
    this.pendingTransactions.set(record.signature, record);
  }

  /**
   * Commits everything buffered, with `accounts` (each changed account's state now; null: it no
   * longer exists), in one SQLite transaction, durable when this returns. If it throws nothing of
   * it was written, and the buffer is kept.
   */
  commit(accounts: ReadonlyMap<string, AccountSnapshot | null> = new Map()): void {
    this.write(accounts, undefined);
  }

  /**
   * Test hook (Chain.dropSlots): in one durable SQLite transaction, removes every block and
   * transaction after `slot` (with their address index rows), stores `accounts` (their rolled-back
   * state) and the buffered metadata. Buffered transactions and blocks after `slot` are discarded.
   */
  dropAfter(slot: number, accounts: ReadonlyMap<string, AccountSnapshot | null>): void {
    this.pendingTransactions = new Map(
      [...this.pendingTransactions].filter(([, record]) => record.slot <= slot),
    );
    this.pendingBlocks = this.pendingBlocks.filter((block) => block.slot <= slot);
    this.write(accounts, slot);
  }

  private write(accounts: ReadonlyMap<string, AccountSnapshot | null>, dropAfter: number | undefined): void {
    if (
      dropAfter === undefined &&
      this.pendingTransactions.size === 0 &&
      this.pendingBlocks.length === 0 &&
      this.pendingMeta.size === 0 &&
      accounts.size === 0
    )
      return;
    const blocks = this.pendingBlocks;
    const transactions = this.pendingTransactions;
    const meta = this.pendingMeta;
    const { insertBlock, insertTransaction, setMeta, upsertAccount, deleteAccount } = this.statements;
    this.db.transaction(() => {
      if (dropAfter !== undefined) this.deleteAfter(dropAfter);
      for (const [key, value] of meta) setMeta.run(key, value);
      for (const [address, account] of accounts) {
        if (account === null || account.lamports === 0n) deleteAccount.run(address);
        else
          upsertAccount.run(
            address,
            account.lamports.toString(),
            account.data,
            account.owner,
            account.executable ? 1 : 0,
            account.rentEpoch.toString(),
          );
      }
      for (const block of blocks) insertBlock.run(block);
      for (const record of transactions.values()) {
        insertTransaction.run(
          record.seq,
          keyHash(record.signature),
          record.signature,
          record.slot,
          record.blockTime,
          record.err === null ? null : JSON.stringify(record.err),
          record.memo,
          Buffer.from(record.wire),
          encodeMeta(record.meta),
          record.accountKeys.join(','),
        );
        this.insertAddresses(record);
      }
    })();
    this.pendingBlocks = [];
    this.pendingTransactions = new Map();
    this.pendingMeta = new Map();
  }

  private deleteAfter(slot: number): void {
    const { transactionsAfter, deleteAddressSignature, deleteTransactionsAfter, deleteBlocksAfter } =
      this.statements;
    for (const row of transactionsAfter.all(slot))
      for (const key of new Set(row.account_keys.split(',')))
        deleteAddressSignature.run(keyHash(key), row.seq);
    deleteTransactionsAfter.run(slot);
    deleteBlocksAfter.run(slot);
  }

  /** Slots that have a committed block in [start, end], ascending, at most `limit`. */
  slotsInRange(start: number, end: number, limit: number): number[] {
    return this.statements.slotsInRange.all(start, end, limit).map((row) => row.slot);
  }

  /** The committed block `depth` blocks below the one of `slot` (0: that slot's, or the newest before it). */
  slotAtDepth(slot: number, depth: number): number | undefined {
    return this.statements.slotAtDepth.get(slot, depth)?.slot;
  }

  /**
   * One statement per transaction for its address index rows (one per account key): a prepared
   * multi-row INSERT per key count, so a transfer costs one call into SQLite instead of three.
   */
  private insertAddresses(record: TransactionRecord): void {
    const count = record.accountKeys.length;
    let statement = this.insertAddressRows.get(count);
    if (!statement) {
      statement = this.db.prepare<[number[]]>(
        `INSERT OR IGNORE INTO address_signatures VALUES ${Array.from({ length: count }, () => '(?, ?)').join(', ')}`,
      );
      this.insertAddressRows.set(count, statement);
    }
    const values: number[] = [];
    for (const key of record.accountKeys) values.push(keyHash(key), record.seq);
    statement.run(values);
  }

  hasSignature(signature: string): boolean {
    if (this.pendingTransactions.has(signature)) return true;
    return this.statements.hasSignature.get(keyHash(signature), signature) !== undefined;
  }

  transaction(signature: string): TransactionRecord | undefined {
    const pending = this.pendingTransactions.get(signature);
    if (pending) return pending;
    const row = this.statements.transactionBySignature.get(keyHash(signature), signature);
    return row && decodeRow(row);
  }

  /** Slot and error of a landed transaction, without loading its meta. */
  status(signature: string): { slot: number; err: TransactionErrorJson | null } | undefined {
    const pending = this.pendingTransactions.get(signature);
    if (pending) return pending;
    const row = this.statements.statusBySignature.get(keyHash(signature), signature);
    return row && { slot: row.slot, err: decodeErr(row.err) };
  }

  statusesInSlot(slot: number): { signature: string; err: TransactionErrorJson | null }[] {
    const stored = this.statements.statusesBySlot
      .all(slot)
      .map((row) => ({ signature: row.signature, err: decodeErr(row.err) }));
    for (const record of this.pendingTransactions.values()) if (record.slot === slot) stored.push(record);
    return stored;
  }

  /** Committed signatures landed at or after `slot`. */
  signaturesSince(slot: number): { signature: string; slot: number }[] {
    return this.statements.signaturesSince.all(slot);
  }

  transactionsInSlot(slot: number): TransactionRecord[] {
    const stored = this.statements.transactionsBySlot.all(slot).map(decodeRow);
    for (const record of this.pendingTransactions.values()) if (record.slot === slot) stored.push(record);
    return stored;
  }

  block(slot: number): BlockRecord | undefined {
    const pending = this.pendingBlocks.find((b) => b.slot === slot);
    if (pending) return pending;
    const row = this.statements.block.get(slot);
    return row && decodeBlock(row);
  }

  /** The newest `count` committed blocks, newest first. */
  recentBlocks(count: number): BlockRecord[] {
    return this.statements.recentBlocks.all(count).map(decodeBlock);
  }

  /**
   * Transactions mentioning `address` in slots up to `maxSlot`, newest first, strictly between the
   * `until` and `before` positions. The slot bound is applied before `limit`: filtering after it
   * answered fewer than `limit` signatures while older ones existed.
   */
  signaturesForAddress(
    key: string,
    beforeSeq: number,
    untilSeq: number,
    maxSlot: number,
    limit: number,
  ): SignatureInfo[] {
    const out: SignatureInfo[] = [];
    const pending = [...this.pendingTransactions.values()]
      .filter(
        (r) => r.seq < beforeSeq && r.seq > untilSeq && r.slot <= maxSlot && r.accountKeys.includes(key),
      )
      .sort((a, b) => b.seq - a.seq);
    for (const record of pending.slice(0, limit)) out.push(record);
    // Page through the index: rows of another address with the same hash are skipped.
    let before = out.length > 0 ? Math.min(beforeSeq, (out[out.length - 1] as SignatureInfo).seq) : beforeSeq;
    const hash = keyHash(key);
    while (out.length < limit) {
      const want = limit - out.length;
      const rows = this.statements.signaturesForAddress.all(hash, before, untilSeq, maxSlot, want);
      for (const row of rows) {
        before = row.seq;
        if (row.account_keys.split(',').includes(key)) out.push(decodeRow(row));
      }
      if (rows.length < want) break;
    }
    return out;
  }

  /** Closes the file; the caller commits first (whatever is still buffered is dropped). */
  close(): void {
    this.db.close();
  }
}

function decodeErr(text: string | null): TransactionErrorJson | null {
  return text === null ? null : (JSON.parse(text) as TransactionErrorJson);
}

function decodeBlock(row: BlockRow): BlockRecord {
  return {
    slot: row.slot,
    blockhash: row.blockhash,
    previousBlockhash: row.previous_blockhash,
    parentSlot: row.parent_slot,
    blockHeight: row.block_height,
    blockTime: row.block_time,
  };
}

function decodeRow(row: TransactionRow): TransactionRecord {
  return {
    seq: row.seq,
    signature: row.signature,
    slot: row.slot,
    blockTime: row.block_time,
    wire: new Uint8Array(row.wire),
    err: decodeErr(row.err),
    memo: row.memo,
    meta: decodeMeta(row.meta),
    accountKeys: row.account_keys.split(','),
  };
}

// Meta is stored as JSON with u64 values as decimal strings and byte strings as base64.
interface StoredTokenBalance extends Omit<TokenBalance, 'amount'> {
  amount: string;
}

function encodeTokenBalances(balances: readonly TokenBalance[]): StoredTokenBalance[] {
  return balances.map((b) => ({ ...b, amount: b.amount.toString() }));
}

function decodeTokenBalances(balances: StoredTokenBalance[]): TokenBalance[] {
  return balances.map((b) => ({ ...b, amount: BigInt(b.amount) }));
}

function encodeMeta(meta: TransactionMeta): string {
  return JSON.stringify({
    fee: meta.fee.toString(),
    preBalances: meta.preBalances.map(String),
    postBalances: meta.postBalances.map(String),
    preTokenBalances: encodeTokenBalances(meta.preTokenBalances),
    postTokenBalances: encodeTokenBalances(meta.postTokenBalances),
    logMessages: meta.logMessages,
    innerInstructions: meta.innerInstructions.map((list) =>
      list.map((ix) => ({ ...ix, data: Buffer.from(ix.data).toString('base64') })),
    ),
    computeUnitsConsumed: meta.computeUnitsConsumed.toString(),
    loadedAddresses: meta.loadedAddresses,
    returnData: meta.returnData && {
      programId: meta.returnData.programId,
      data: Buffer.from(meta.returnData.data).toString('base64'),
    },
  });
}

function decodeMeta(text: string): TransactionMeta {
  const stored = JSON.parse(text);
  const bytes = (b64: string) => new Uint8Array(Buffer.from(b64, 'base64'));
  return {
    fee: BigInt(stored.fee),
    preBalances: stored.preBalances.map(BigInt),
    postBalances: stored.postBalances.map(BigInt),
    preTokenBalances: decodeTokenBalances(stored.preTokenBalances),
    postTokenBalances: decodeTokenBalances(stored.postTokenBalances),
    logMessages: stored.logMessages,
    innerInstructions: stored.innerInstructions.map((list: { data: string }[]) =>
      list.map((ix) => ({ ...ix, data: bytes(ix.data) })),
    ),
    computeUnitsConsumed: BigInt(stored.computeUnitsConsumed),
    loadedAddresses: stored.loadedAddresses,
    returnData: stored.returnData && {
      programId: stored.returnData.programId,
      data: bytes(stored.returnData.data),
    },
  };
}
