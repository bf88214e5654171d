// A write-ahead journal of the embedded anvil's blocks, so what the gateway reported as landed
// survives a hard kill of anvil itself.
//
// Anvil keeps its chain in memory and writes it to its --state file on exit and every few seconds:
// a SIGKILL (OOM, power loss, kill -9 of the process group) goes back to the last write, and every
// payment mined since would vanish under the gateway's `confirmed`. The journal closes that gap:
// - it follows anvil's blocks and appends each one — number, timestamp and the raw signed bytes of
//   its transactions — to `journal.ndjson`, fsynced;
// - the adapter reports a transaction mined only once its block is in the journal (`syncThrough`,
//   which catches up on demand), so nothing the gateway reported is missing from it;
// - at start, blocks in the journal beyond what anvil's state file holds are mined again from their
//   raw transactions, in order, with their own block numbers and timestamps (`replay`): the same
//   transaction hashes, nonces and balances, so the gateway's records match the chain again.
// Invariant: every block number above the state file's height is in the journal, from that height on
// (the follower starts from the height anvil loaded); entries at or below it are pruned at start.
//
// What it cannot restore: state changed without a transaction (anvil_setBalance, anvil_setCode — the
// gateway re-places its own contracts at every start) and transactions sent through account
// impersonation (their signature is not real; skipped with a warning). Rewinding the chain
// (evm_revert, anvil_reset) is not followed: the journal would still hold the blocks rewound.
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
      const raw = JSON.parse(line) as { n: string; t: string; txs: Hex[] };
      entries.push({ number: BigInt(raw.n), timestamp: BigInt(raw.t), transactions: raw.txs });
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

export class AnvilJournal {
  private fd: number;
  private journaled: bigint;
  private catchingUp: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly rpc: ReturnType<typeof jsonRpc>;

  /**
   * Follows anvil from `height` (what it loaded, every block of which its state file holds): the
   * journal is rewritten with only the entries above it, atomically.
   */
  private compactedAt = Date.now();

  /** `stateFile`: anvil's --state file, whose writes let the journal drop what they hold. */
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
    this.journaled = kept.at(-1)?.number ?? height;
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

  /** Resolves once block `number` (and every one before it) is in the journal, durably. */
  async syncThrough(number: bigint): Promise<void> {
    while (this.journaled < number) {
      if (this.fd < 0) throw new Error('the anvil journal is closed');
      const before = this.journaled;
      await this.catchUp();
      // No progress (the block not served yet): wait a tick rather than spin.
      if (this.journaled === before) await new Promise((resolve) => setTimeout(resolve, FOLLOW_INTERVAL_MS));
    }
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

  /** One catch-up at a time: appends every block up to anvil's head, then one fsync. */
  private catchUp(): Promise<void> {
    this.catchingUp ??= this.appendNewBlocks().finally(() => {
      this.catchingUp = undefined;
    });
    return this.catchingUp;
  }

  private async appendNewBlocks(): Promise<void> {
    if (this.fd < 0) return;
    const head = BigInt(await this.rpc<Hex>('eth_blockNumber', []));
    if (head <= this.journaled) return;
    let text = '';
    let last = this.journaled;
    for (let n = this.journaled + 1n; n <= head; n++) {
      const block = await this.rpc<{ timestamp: Hex; transactions: Hex[] } | null>('eth_getBlockByNumber', [
        `0x${n.toString(16)}`,
        false,
      ]);
      if (block === null) break;
      const transactions = await Promise.all(
        block.transactions.map((hash) => this.rpc<Hex>('eth_getRawTransactionByHash', [hash])),
      );
      text += line({ number: n, timestamp: BigInt(block.timestamp), transactions });
      last = n;
    }
    if (text === '' || this.fd < 0) return;
    writeSync(this.fd, text);
    fsyncSync(this.fd);
    this.journaled = last;
    if (Date.now() - this.compactedAt >= COMPACT_INTERVAL_MS) this.compact();
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
  return `${JSON.stringify({ n: entry.number.toString(), t: entry.timestamp.toString(), txs: entry.transactions })}\n`;
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
