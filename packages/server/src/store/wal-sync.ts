import { close, fdatasync, fsync, open } from 'node:fs';
import { dirname } from 'node:path';

/** Flushes one file's written data to disk, off the event loop; a test may count or hold the calls. */
export type SyncFile = (fd: number) => Promise<void>;

const syncOnThreadPool: SyncFile = (fd) =>
  new Promise((resolve, reject) => fdatasync(fd, (error) => (error ? reject(error) : resolve())));

/**
 * Makes SQLite commits durable without blocking the event loop. The connection runs WAL with
 * `synchronous = NORMAL`, so a COMMIT only writes its frames to the write-ahead log (the OS's cache);
 * `durable()` then flushes the log with fdatasync on libuv's thread pool. Whoever committed waits for
 * that before it answers or acts, so a commit announced is on disk as with `synchronous = FULL`, but the
 * ~0.3–2 ms of each flush no longer stops every other request: with FULL, better-sqlite3 ran the fsync
 * inside COMMIT on the event loop: at 1,000 receives/s, about 300 commits a second, 10–30 % of its time,
 * and more when the disk is busy.
 *
 * Invariants:
 * - `durable()` resolves only after a flush that began after the call, so it covers every commit made
 *   before the call, by this process or another on the same file (fdatasync flushes the file, whichever
 *   descriptor wrote it). Recovery after a power loss replays the log's valid prefix, so every commit
 *   flushed is kept.
 * - Flushes are coalesced: callers that arrive while one is under way share the next one, so a burst of
 *   commits costs two flushes, not one each.
 * - A commit is visible to other readers between its COMMIT and its flush (about a millisecond). Readers
 *   that act outside storage on what they read (the event hub pushing to clients) call `durable()` first;
 *   a transaction that reads and then commits is covered by its own flush.
 */
export class WalSync {
  private fd: Promise<number> | undefined;
  private running: Promise<void> | undefined;
  private next: { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void } | undefined;
  private closed = false;

  constructor(
    private readonly walFile: string,
    private readonly syncFile: SyncFile = syncOnThreadPool,
  ) {}

  /** Resolves once every commit made before this call is on disk. */
  durable(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('storage is closed'));
    if (this.running === undefined) return this.start();
    // The flush under way may have begun before this caller's commit: wait for the next one.
    if (this.next === undefined) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.next = { promise, resolve, reject };
    }
    return this.next.promise;
  }

  /** Waits for the flush under way, then closes the log's descriptor. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([this.running, this.next?.promise]);
    const fd = await this.fd?.catch(() => undefined);
    this.fd = undefined;
    if (fd !== undefined) await new Promise<void>((resolve) => close(fd, () => resolve()));
  }

  private start(): Promise<void> {
    const flush = this.flush().finally(() => {
      this.running = undefined;
      const waiting = this.next;
      this.next = undefined;
      if (waiting !== undefined) this.start().then(waiting.resolve, waiting.reject);
    });
    this.running = flush;
    return flush;
  }

  private async flush(): Promise<void> {
    this.fd ??= openLog(this.walFile);
    let fd: number;
    try {
      fd = await this.fd;
    } catch (error) {
      // Opened again at the next flush: the log may not have existed yet.
      this.fd = undefined;
      throw error;
    }
    await this.syncFile(fd);
  }
}

/**
 * The log's descriptor, opened for reading and writing though nothing is written through it: Windows
 * flushes only a handle with write access (Linux and macOS would take a read-only one). 'r+' neither
 * creates nor truncates. SQLite keeps the file while any connection has the database open, so the
 * descriptor stays valid for this store's life. Its directory is flushed once, so the log's own name
 * survives a power loss too (where a directory cannot be flushed, as on Windows, that is skipped).
 */
async function openLog(file: string): Promise<number> {
  const fd = await new Promise<number>((resolve, reject) =>
    open(file, 'r+', (error, opened) => (error ? reject(error) : resolve(opened))),
  );
  await syncDirectory(dirname(file)).catch(() => undefined);
  return fd;
}

function syncDirectory(dir: string): Promise<void> {
  return new Promise((resolve, reject) =>
    open(dir, 'r', (error, fd) => {
      if (error) return reject(error);
      fsync(fd, (syncError) => close(fd, () => (syncError ? reject(syncError) : resolve())));
    }),
  );
}
