import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The worker's code, plain JavaScript so it runs as it is whatever loads the gateway (tsx, a build).
 * It keeps its own connection to the database and runs a PASSIVE checkpoint every `intervalMs`: one
 * that copies what it can from the log into the database without waiting for, or blocking, anyone.
 * When the log has grown past `restartPages`, a RESTART checkpoint follows (see WalCheckpointer).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 5000');
db.pragma('wal_autocheckpoint = 0');
const checkpoint = db.prepare('pragma wal_checkpoint(PASSIVE)');
const restart = db.prepare('pragma wal_checkpoint(RESTART)');
let timer;
const round = () => {
  try {
    const { log } = checkpoint.get();
    if (log >= workerData.restartPages) restart.get();
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error) });
  }
  timer = setTimeout(round, workerData.intervalMs);
};
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
round();
`;

/** How often the worker copies the log into the database. */
const CHECKPOINT_INTERVAL_MS = 200;

/** 64 MiB of 4 KiB pages: the log's size under sustained writes (see WalCheckpointer). */
const RESTART_PAGES = 16_384;

/**
 * Checkpoints a SQLite database's write-ahead log on a worker thread. SQLite's own automatic checkpoint
 * runs inside the COMMIT that crosses 1,000 log pages, on the committing connection, so here on the event
 * loop: it copies the pages into the database and flushes both files, 3–7 ms during which no request moves
 * (at 500 receives/s, about one commit in fifty paid it). The gateway's connection turns the automatic
 * checkpoint off and this worker does the copying, on the other core; PASSIVE never blocks the writer.
 *
 * SQLite writes the log from its start again only when a write transaction begins while every page of
 * the log is already in the database. Under sustained writes (a commit every millisecond) a PASSIVE
 * checkpoint never catches up that exactly: the log kept every page ever written (300 MB after the
 * receive benchmark) and would in time fill the disk. So once the log has passed `restartPages`, the
 * worker follows with a RESTART checkpoint: it holds writers back while it copies the pages the PASSIVE
 * one left (milliseconds' worth) and flushes the database — a commit on the gateway's connection
 * meanwhile waits for it (busy_timeout) — so the next commit starts the log over.
 *
 * If the worker fails, the connection's automatic checkpoint is turned back on (`fallBack`), so the log
 * never grows without bound.
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  private stopped = false;

  constructor(
    file: string,
    private readonly fallBack: () => void,
    private readonly log: (message: string) => void = () => {},
    restartPages: number = RESTART_PAGES,
  ) {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        file,
        intervalMs: CHECKPOINT_INTERVAL_MS,
        restartPages,
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      },
    });
    // The worker must not keep the process alive on its own.
    this.worker.unref();
    this.worker.on('message', (message: { error?: string }) => {
      if (message.error !== undefined) this.log(`WAL checkpoint failed: ${message.error}`);
    });
    this.worker.on('error', (error) => this.failed(String(error)));
    this.worker.on('exit', (code) => {
      if (!this.stopped) this.failed(`its thread exited with code ${code}`);
    });
  }

  /** Ends the worker's connection; the gateway's own connection checkpoints at its close. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage('stop');
    // Held, not unref'd: the worker itself is unref'd, and this wait must keep the process up.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 2_000)))]);
    clearTimeout(timer);
    await this.worker.terminate();
  }

  private failed(why: string): void {
    if (this.stopped) return;
    this.stopped = true;
    this.log(`the WAL checkpoint worker stopped (${why}); SQLite's automatic checkpoint is back on`);
    this.fallBack();
  }
}
