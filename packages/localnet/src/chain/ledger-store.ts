// The durable ledger: blocks, transactions and the signatures-by-address index, in SQLite
// (a file in the ledger directory, or in memory when there is none).
//
// Writes are buffered and committed once per slot in one SQLite transaction; reads consult the
// buffer first, so a caller never sees the difference. Invariant kept by `Chain`: the buffer is
// committed before every account snapshot, so a snapshot never holds effects of a transaction
// the ledger does not know — after a crash a replay is still refused.
import Database from 'better-sqlite3';
import type { TransactionErrorJson } from './transaction-error.ts';
import type { BlockRecord, TokenBalance, TransactionMeta, TransactionRecord } from './transaction-record.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blocks (
  slot INTEGER PRIMARY KEY, blockhash TEXT NOT NULL, previous_blockhash TEXT NOT NULL,
  parent_slot INTEGER NOT NULL, block_height INTEGER NOT NULL, block_time INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS transactions (
  seq INTEGER PRIMARY KEY, signature TEXT NOT NULL UNIQUE, slot INTEGER NOT NULL, block_time INTEGER NOT NULL,
  err TEXT, memo TEXT, wire BLOB NOT NULL, meta TEXT NOT NULL, account_keys TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS transactions_by_slot ON transactions (slot, seq);
CREATE TABLE IF NOT EXISTS address_signatures (
  address TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (address, seq)) WITHOUT ROWID;
`;

interface TransactionRow {
  seq: number;
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

export class LedgerStore {
  private readonly db: Database.Database;
  private pendingTransactions = new Map<string, TransactionRecord>();
  private pendingBlocks: BlockRecord[] = [];
  private readonly statements;

  /** `path` is a file, or `:memory:`. */
  constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    // NORMAL in WAL mode: a power cut may lose the last commits but never corrupts the file.
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(SCHEMA);
    this.statements = {
      getMeta: this.db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?'),
      setMeta: this.db.prepare(
        'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
      ),
      insertBlock: this.db.prepare(
        'INSERT OR REPLACE INTO blocks VALUES (@slot, @blockhash, @previousBlockhash, @parentSlot, @blockHeight, @blockTime)',
      ),
      insertTransaction: this.db.prepare(
        'INSERT INTO transactions VALUES (@seq, @signature, @slot, @blockTime, @err, @memo, @wire, @meta, @accountKeys)',
      ),
      insertAddress: this.db.prepare('INSERT OR IGNORE INTO address_signatures VALUES (?, ?)'),
      hasSignature: this.db.prepare<[string], { one: number }>(
        'SELECT 1 AS one FROM transactions WHERE signature = ?',
      ),
      transactionBySignature: this.db.prepare<[string], TransactionRow>(
        'SELECT * FROM transactions WHERE signature = ?',
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
      signaturesForAddress: this.db.prepare<[string, number, number, number], TransactionRow>(
        `SELECT t.* FROM address_signatures a JOIN transactions t ON t.seq = a.seq
         WHERE a.address = ? AND a.seq < ? AND a.seq > ? ORDER BY a.seq DESC LIMIT ?`,
      ),
    };
  }

  getMeta(key: string): string | undefined {
    return this.statements.getMeta.get(key)?.value;
  }

  setMeta(key: string, value: string): void {
    this.statements.setMeta.run(key, value);
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

  pendingCount(): number {
    return this.pendingTransactions.size;
  }

  /** Commits everything buffered in one SQLite transaction. */
  flush(): void {
    if (this.pendingTransactions.size === 0 && this.pendingBlocks.length === 0) return;
    const blocks = this.pendingBlocks;
    const transactions = this.pendingTransactions;
    const { insertBlock, insertTransaction, insertAddress } = this.statements;
    this.db.transaction(() => {
      for (const block of blocks) insertBlock.run(block);
      for (const record of transactions.values()) {
        insertTransaction.run({
          seq: record.seq,
          signature: record.signature,
          slot: record.slot,
          blockTime: record.blockTime,
          err: record.err === null ? null : JSON.stringify(record.err),
          memo: record.memo,
          wire: Buffer.from(record.wire),
          meta: encodeMeta(record.meta),
          accountKeys: record.accountKeys.join(','),
        });
        for (const key of record.accountKeys) insertAddress.run(key, record.seq);
      }
    })();
    this.pendingBlocks = [];
    this.pendingTransactions = new Map();
  }

  hasSignature(signature: string): boolean {
    if (this.pendingTransactions.has(signature)) return true;
    return this.statements.hasSignature.get(signature) !== undefined;
  }

  transaction(signature: string): TransactionRecord | undefined {
    const pending = this.pendingTransactions.get(signature);
    if (pending) return pending;
    const row = this.statements.transactionBySignature.get(signature);
    return row && decodeRow(row);
  }

  /** Signatures landed at or after `slot` (the ledger is flushed at every slot, so none are pending here). */
  signaturesSince(slot: number): { signature: string; slot: number }[] {
    this.flush();
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

  /** The newest `count` blocks, newest first. */
  recentBlocks(count: number): BlockRecord[] {
    this.flush();
    return this.statements.recentBlocks.all(count).map(decodeBlock);
  }

  /** Transactions mentioning `address`, newest first, strictly between the `until` and `before` positions. */
  signaturesForAddress(key: string, beforeSeq: number, untilSeq: number, limit: number): SignatureInfo[] {
    const out: SignatureInfo[] = [];
    const pending = [...this.pendingTransactions.values()]
      .filter((r) => r.seq < beforeSeq && r.seq > untilSeq && r.accountKeys.includes(key))
      .sort((a, b) => b.seq - a.seq);
    for (const record of pending.slice(0, limit)) out.push(record);
    if (out.length < limit) {
      const rows = this.statements.signaturesForAddress.all(key, beforeSeq, untilSeq, limit - out.length);
      for (const row of rows) out.push(decodeRow(row));
    }
    return out;
  }

  close(): void {
    this.flush();
    this.db.close();
  }
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
    err: row.err === null ? null : (JSON.parse(row.err) as TransactionErrorJson),
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
