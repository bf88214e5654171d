// A write-ahead journal of the embedded anvil's blocks, so what the gateway reported as landed
// survives a hard kill of anvil itself, and what it reported gone stays gone.
//
// Anvil keeps its chain in memory and writes it to its --state file on exit and every few seconds:
// a SIGKILL (OOM, power loss, kill -9 of the process group) goes back to the last write, and every
// payment mined since would vanish under the gateway's `confirmed`. The journal closes that gap:
// - it follows anvil's blocks and appends each one — number, hash, parent hash, timestamp and the raw
//   signed bytes of its transactions — to `journal.ndjson`, fsynced;
// - the adapter reports a transaction mined only once its block (that very block: number and hash)
//   is in the journal (`syncThrough`, which catches up on demand), and reports a transaction absent
//   only after a catch-up that started after it looked (`sync`); every read by which the gateway learns
//   of a landing goes through one of them (receipts, transactions, reference scans, x402 settlement
//   searches, the faucet), so nothing the gateway reported is missing from the journal, and nothing it
//   saw gone is still in it;
// - at start, the journal's blocks the loaded state does not hold are mined again from their raw
//   transactions, in order, with their own block numbers and timestamps (`replay`): the same
//   transaction hashes, nonces and balances, so the gateway's records match the chain again.
//
// Rewinds (anvil_rollback, anvil_reorg, evm_revert, a reorg on a forked chain) are followed by block
// hash, not recorded as operations: the chain's own blocks are the truth, and anvil gives no hook for
// its rewinds anyway (tests and tools call them directly). Each catch-up checks the journal's last block
// is still the chain's (the next block's parent hash, or the head's hash when no block came since);
// when it is not, the journal is cut back, atomically, to the newest block the chain still has with the
// same hash, and the new branch is journaled from there. So the journal is always one chain, and it is
// the chain anvil held at its last catch-up (at most FOLLOW_INTERVAL_MS old, and never older than
// anything the gateway read). At replay, a journaled block the loaded state holds with another hash (a
// state written before a rewind the journal followed) is rolled back first, so what is replayed is the
// journal's chain exactly, never blocks rewound before the crash.
// Invariant: every block number above the state file's height is in the journal, from that height on
// (the follower starts from the height anvil loaded); entries at or below it are pruned at start.
//
// What it cannot restore: state changed without a transaction (anvil_setBalance, anvil_setCode — the
// gateway re-places its own contracts at every start), transactions sent through account
// impersonation (their signature is not real; skipped with a warning), and a rewind below the blocks
// the journal still holds followed by a kill before anvil's next state write (the loaded state then
// holds blocks rewound; the replay warns). anvil_reset is not followed.
// Growth: every ten minutes the journal drops the blocks anvil's state file surely holds (mined a
// minute or more before its last write), so a long run keeps only the last few minutes.
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeSync,
} from 'node:fs';
import type { Hex } from 'viem';

export interface JournalEntry {
  readonly number: bigint;
  readonly timestamp: bigint;
  /** The block's hash and its parent's; absent in a journal written before they were recorded. */
  readonly hash?: Hex | undefined;
  readonly parentHash?: Hex | undefined;
  /** Raw signed transactions, in block order. */
  readonly transactions: readonly Hex[];
}

/** How often the follower looks for new blocks; the adapter's own wait catches up on demand anyway. */
const FOLLOW_INTERVAL_MS = 100;
/** How often the journal drops what anvil's state file surely holds, so a long run does not grow it. */
const COMPACT_INTERVAL_MS = 10 * 60_000;
/**
 * A block is surely in the state file when it was mined this long before the file's last write
 * (anvil dumps its whole state; a dump takes far less than this).
 */
const STATE_WRITE_MARGIN_SECONDS = 60n;

/**
 * The entries a journal must keep, given when anvil last wrote its state file (unix seconds): those
 * mined less than STATE_WRITE_MARGIN_SECONDS before it, and every later one. Block timestamps only
 * grow, so the kept entries are a suffix.
 */
export function entriesToKeep(entries: readonly JournalEntry[], stateWrittenAt: bigint): JournalEntry[] {
  const first = entries.findIndex((entry) => entry.timestamp >= stateWrittenAt - STATE_WRITE_MARGIN_SECONDS);
  return first < 0 ? [] : entries.slice(first);
}

/** Reads a journal; a torn last line (a kill mid-append, before its fsync) is ignored. */
export function readJournal(path: string): JournalEntry[] {
  if (!existsSync(path)) return [];
  const entries: JournalEntry[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    try {
      const raw = JSON.parse(line) as { n: string; t: string; h?: Hex; p?: Hex; txs: Hex[] };
      entries.push({
        number: BigInt(raw.n),
        timestamp: BigInt(raw.t),
        hash: raw.h,
        parentHash: raw.p,
        transactions: raw.txs,
      });
    } catch {
      break;
    }
  }
  return entries;
}

/**
 * Mines the journal's blocks above anvil's height again, with their numbers and timestamps (anvil
 * started without interval mining). Returns how many transactions were replayed and skipped.
 */
export async function replayJournal(
  rpcUrl: string,
  entries: readonly JournalEntry[],
  warn: (message: string) => void,
): Promise<{ blocks: number; replayed: number; skipped: number }> {
  const rpc = jsonRpc(rpcUrl);
  let height = BigInt(await rpc<Hex>('eth_blockNumber', []));
  let blocks = 0;
  let replayed = 0;
  let skipped = 0;
  // The loaded state may hold, under journaled numbers, blocks the chain had rewound before the crash
  // (written before the rewind, the journal followed it): they are rolled back, and the journal's
  // branch is mined in their place. The journal is one chain, so the blocks that differ are a suffix.
  const held = entries.filter((entry) => entry.number <= height);
  const differs = async (entry: JournalEntry) =>
    entry.hash !== undefined && (await blockHash(rpc, entry.number)) !== entry.hash;
  let low = 0;
  let high = held.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (await differs(held[middle] as JournalEntry)) high = middle;
    else low = middle + 1;
  }
  const firstDiffering = held[low];
  if (firstDiffering !== undefined) {
    const keep = firstDiffering.number - 1n;
    await rpc('anvil_rollback', [Number(height - keep)]);
    height = keep;
    warn(
      `anvil journal: blocks ${firstDiffering.number}.. of the loaded state were rewound before the crash; rolled back`,
    );
  }
  const first = entries.find((entry) => entry.number > height);
  // (Block 0 differs whenever no state was written: anvil stamps a new genesis at each start.)
  if (first?.parentHash !== undefined && first.number === height + 1n && height > 0n) {
    if ((await blockHash(rpc, height)) !== first.parentHash)
      warn(`anvil journal: the loaded state's block ${height} is not the journal's; replaying on top of it`);
  }
  await rpc('evm_setAutomine', [false]);
  for (const entry of entries) {
    if (entry.number <= height) continue;
    // A hole cannot happen by the invariant; were it there, empty blocks keep the numbers right.
    if (entry.number > height + 1n)
      await rpc('anvil_mine', [`0x${(entry.number - height - 1n).toString(16)}`]);
    for (const tx of entry.transactions) {
      try {
        await rpc('eth_sendRawTransaction', [tx]);
        replayed++;
      } catch (error) {
        skipped++;
        warn(`anvil journal: block ${entry.number}: a transaction was not replayed: ${String(error)}`);
      }
    }
    // Its own timestamp where anvil takes it; a loaded state may already have moved anvil's clock past
    // it (the block env it dumps is the next block's), then anvil's own next timestamp.
    await rpc('evm_mine', [{ timestamp: Number(entry.timestamp) }]).catch(() => rpc('evm_mine', []));
    height = entry.number;
    blocks++;
  }
  await rpc('evm_setAutomine', [true]);
  return { blocks, replayed, skipped };
}

interface RpcBlock {
  readonly number: Hex;
  readonly hash: Hex;
  readonly parentHash: Hex;
  readonly timestamp: Hex;
  readonly transactions: Hex[];
}

/** How many times a catch-up starts over when the chain changes under it, before leaving it to the next. */
const CATCH_UP_ATTEMPTS = 5;
/** Catch-ups without progress after which a block a read named is taken as gone (100 ms apart). */
const MISSING_BLOCK_TRIES = 20;

/**
 * The journal of a running anvil. A chain reader (the gateway's EVM adapter) reports a landing only once
 * `syncThrough` says its block is journaled, and an absence only after `sync`: the gateway's
 * ChainDurability port (packages/server/src/chains/evm/chain-durability.ts) is this class's shape.
 */
export class AnvilJournal {
  private fd: number;
  /** The newest journaled block (or the loaded height, when none is), and its hash once known. */
  private journaled: bigint;
  private tipHash: Hex | undefined;
  /** Number and hash of every entry of the file, oldest first. */
  private marks: { readonly number: bigint; readonly hash: Hex | undefined }[];
  private catchingUp: Promise<void> | undefined;
  private nextCatchUp: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly rpc: ReturnType<typeof jsonRpc>;
  private compactedAt = Date.now();

  /**
   * Follows anvil from `height` (what it loaded, every block of which its state file holds): the
   * journal is rewritten with only the entries above it, atomically. `stateFile`: anvil's --state
   * file, whose writes let the journal drop what they hold.
   */
  constructor(
    private readonly path: string,
    rpcUrl: string,
    height: bigint,
    private readonly warn: (message: string) => void,
    private readonly stateFile?: string,
  ) {
    this.rpc = jsonRpc(rpcUrl);
    const kept = readJournal(path).filter((entry) => entry.number > height);
    rewrite(path, kept);
    this.fd = openSync(path, 'a', 0o600);
    this.marks = kept.map((entry) => ({ number: entry.number, hash: entry.hash }));
    this.journaled = kept.at(-1)?.number ?? height;
    this.tipHash = kept.at(-1)?.hash;
    // An anvil that is down is reported once, not ten times a second, until it answers again.
    let failing = false;
    this.timer = setInterval(() => {
      this.catchUp().then(
        () => {
          failing = false;
        },
        (error: unknown) => {
          if (!failing) this.warn(`anvil journal: cannot follow anvil's blocks: ${String(error)}`);
          failing = true;
        },
      );
    }, FOLLOW_INTERVAL_MS);
    this.timer.unref();
  }

  /**
   * Resolves true once block `number` with hash `hash` (and every block before it) is in the journal,
   * durably; false when, after a catch-up that started after the call, the chain no longer has that
   * block (the read that named it saw a block rewound since): the caller reads again.
   */
  async syncThrough(number: bigint, hash?: string): Promise<boolean> {
    const wanted = hash?.toLowerCase();
    const holds = () => {
      if (this.journaled < number) return false;
      const held = this.marks.find((mark) => mark.number === number)?.hash;
      // At or below the loaded height (no mark), the state file holds it.
      return wanted === undefined || held === undefined || held === wanted;
    };
    if (holds()) return true;
    for (let tries = 0; ; tries++) {
      if (this.fd < 0) throw new Error('the anvil journal is closed');
      const before = this.journaled;
      await this.sync();
      if (holds()) return true;
      // Caught up with a chain that has another block there, or none (rewound below it).
      if (this.journaled >= number || tries >= MISSING_BLOCK_TRIES) return false;
      // No progress (the block not served yet): wait a tick rather than spin.
      if (this.journaled === before) await new Promise((resolve) => setTimeout(resolve, FOLLOW_INTERVAL_MS));
    }
  }

  /** Resolves after a catch-up that started after the call: rewinds seen by then are followed. */
  sync(): Promise<void> {
    if (this.catchingUp === undefined) return this.catchUp();
    // One already running may have read the chain before the caller did: the next one is its answer.
    this.nextCatchUp ??= this.catchingUp
      .catch(() => {})
      .then(() => {
        this.nextCatchUp = undefined;
        return this.catchUp();
      });
    return this.nextCatchUp;
  }

  /** Stops following (before anvil stops, so no catch-up asks a stopped anvil). Idempotent. */
  close(): void {
    clearInterval(this.timer);
    if (this.fd < 0) return;
    closeSync(this.fd);
    this.fd = -1;
  }

  /** Empties the journal: only once anvil wrote its whole state on a clean exit (no replay needed). */
  truncate(): void {
    this.close();
    const fd = openSync(this.path, 'w', 0o600);
    fsyncSync(fd);
    closeSync(fd);
  }

  /** One catch-up at a time: follows a rewind, appends every block up to anvil's head, then one fsync. */
  private catchUp(): Promise<void> {
    this.catchingUp ??= (async () => {
      for (let attempt = 0; attempt < CATCH_UP_ATTEMPTS; attempt++) if (await this.appendNewBlocks()) return;
    })().finally(() => {
      this.catchingUp = undefined;
    });
    return this.catchingUp;
  }

  /** True once the journal ends at the head read at its start; false when the chain changed meanwhile. */
  private async appendNewBlocks(): Promise<boolean> {
    if (this.fd < 0) return true;
    const head = await this.rpc<RpcBlock | null>('eth_getBlockByNumber', ['latest', false]);
    if (head === null) return true;
    const height = BigInt(head.number);
    if (this.tipHash === undefined && this.journaled <= height)
      this.tipHash = await blockHash(this.rpc, this.journaled);
    if (height < this.journaled || (height === this.journaled && head.hash !== this.tipHash)) {
      await this.cutBack(height);
      return false;
    }
    if (height === this.journaled) return true;
    let text = '';
    let last = this.journaled;
    let lastHash = this.tipHash;
    const added: { number: bigint; hash: Hex }[] = [];
    let complete = true;
    for (let n = this.journaled + 1n; n <= height; n++) {
      const block =
        n === height
          ? head
          : await this.rpc<RpcBlock | null>('eth_getBlockByNumber', [`0x${n.toString(16)}`, false]);
      if (block === null || (lastHash !== undefined && block.parentHash !== lastHash)) {
        complete = false;
        // The journal's last block is not the chain's any more.
        if (n === this.journaled + 1n && block !== null) await this.cutBack(height);
        break;
      }
      const transactions = await Promise.all(
        block.transactions.map((hash) => this.rpc<Hex | null>('eth_getRawTransactionByHash', [hash])),
      );
      // A transaction gone between the two reads: the block was rewound meanwhile.
      if (transactions.some((tx) => tx === null)) {
        complete = false;
        break;
      }
      text += line({
        number: n,
        timestamp: BigInt(block.timestamp),
        hash: block.hash,
        parentHash: block.parentHash,
        transactions: transactions as Hex[],
      });
      added.push({ number: n, hash: block.hash });
      last = n;
      lastHash = block.hash;
    }
    if (text === '' || this.fd < 0) return complete || this.fd < 0;
    writeSync(this.fd, text);
    fsyncSync(this.fd);
    this.marks.push(...added);
    this.journaled = last;
    this.tipHash = lastHash;
    if (Date.now() - this.compactedAt >= COMPACT_INTERVAL_MS) this.compact();
    return complete;
  }

  /**
   * The chain was rewound under the journal: cuts it back, atomically, to the newest journaled block the
   * chain still has with the same hash (none: to the loaded height, or the head if that is lower), so
   * the next catch-up journals the new branch from there.
   */
  private async cutBack(height: bigint): Promise<void> {
    let keep = this.marks.length;
    let fork: bigint | undefined;
    while (keep > 0) {
      const mark = this.marks[keep - 1] as { number: bigint; hash: Hex | undefined };
      if (
        mark.number <= height &&
        (mark.hash === undefined || (await blockHash(this.rpc, mark.number)) === mark.hash)
      ) {
        fork = mark.number;
        break;
      }
      keep--;
    }
    if (fork === undefined) {
      const base = (this.marks[0]?.number ?? this.journaled + 1n) - 1n;
      fork = base < height ? base : height;
    }
    if (this.fd < 0) return;
    const dropped = this.marks.length - keep;
    closeSync(this.fd);
    rewrite(
      this.path,
      readJournal(this.path).filter((entry) => entry.number <= (fork as bigint)),
    );
    this.fd = openSync(this.path, 'a', 0o600);
    this.marks = this.marks.slice(0, keep);
    this.journaled = fork;
    this.tipHash = await blockHash(this.rpc, fork);
    this.warn(`anvil journal: the chain was rewound to block ${fork}; ${dropped} journaled blocks dropped`);
  }

  /** Drops the entries anvil's state file holds (inside a catch-up, so no append runs meanwhile). */
  private compact(): void {
    this.compactedAt = Date.now();
    if (this.stateFile === undefined || !existsSync(this.stateFile)) return;
    const writtenAt = BigInt(Math.floor(statSync(this.stateFile).mtimeMs / 1000));
    const entries = readJournal(this.path);
    const kept = entriesToKeep(entries, writtenAt);
    if (kept.length === entries.length) return;
    closeSync(this.fd);
    rewrite(this.path, kept);
    this.fd = openSync(this.path, 'a', 0o600);
    this.marks = kept.map((entry) => ({ number: entry.number, hash: entry.hash }));
  }
}

/** Replaces the journal with `entries` atomically and durably (temporary file, fsync, rename). */
function rewrite(path: string, entries: readonly JournalEntry[]): void {
  const temp = `${path}.tmp`;
  const fd = openSync(temp, 'w', 0o600);
  for (const entry of entries) writeSync(fd, line(entry));
  fsyncSync(fd);
  closeSync(fd);
  renameSync(temp, path);
}

function line(entry: JournalEntry): string {
  return `${JSON.stringify({ n: entry.number.toString(), t: entry.timestamp.toString(), h: entry.hash, p: entry.parentHash, txs: entry.transactions })}\n`;
}

async function blockHash(rpc: ReturnType<typeof jsonRpc>, number: bigint): Promise<Hex | undefined> {
  const block = await rpc<{ hash: Hex } | null>('eth_getBlockByNumber', [`0x${number.toString(16)}`, false]);
  return block?.hash;
}

/** A bare JSON-RPC caller for anvil's own methods on 127.0.0.1. */
function jsonRpc(url: string) {
  let id = 0;
  return async <T>(method: string, params: unknown[]): Promise<T> => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await response.json()) as { result?: T; error?: { message?: string } };
    if (body.error !== undefined) throw new Error(`${method}: ${body.error.message ?? 'error'}`);
    return body.result as T;
  };
}
