import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** Anvil's own default; also what wallets and tools assume for a local chain. */
export const ANVIL_CHAIN_ID = 31337;
/** How long anvil may take to load its state and listen. */
const START_TIMEOUT_MS = 15_000;
/** How long anvil may take to write its state file after SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 10_000;
/** Lines of anvil's output kept to explain a failed start. */
const OUTPUT_TAIL_LINES = 30;

export interface AnvilOptions {
  /** 0: any free port (tests). */
  readonly port: number;
  /**
   * Anvil's `--state`: loaded at start when it exists, written on exit (SIGTERM) and every
   * `stateIntervalSeconds`, with blocks and transactions, so balances and history survive restarts.
   * Unset: the chain lives in memory only.
   */
  readonly stateFile?: string | undefined;
  /** Bounds what a hard kill of anvil itself (OOM, power loss) can lose; a gateway crash loses nothing. */
  readonly stateIntervalSeconds?: number | undefined;
  /**
   * Anvil mines a block per transaction. With a block time, it also mines an empty block every so many
   * seconds, so block heights (and gate402's block-based expiry) advance on a quiet chain.
   */
  readonly blockTimeSeconds?: number | undefined;
  /**
   * Anvil's `--slots-in-an-epoch`: its `finalized` block is the latest minus twice this (default 32,
   * so 64 blocks). Only read with a block time, which is what moves a quiet chain to finality.
   */
  readonly slotsInAnEpoch?: number | undefined;
}

export interface AnvilProcess {
  readonly rpcUrl: string;
  readonly wsUrl: string;
  readonly port: number;
  readonly pid: number;
  /** SIGTERM (anvil writes its state file), then waits for the exit. Safe to call twice. */
  stop(): Promise<void>;
  /** After `stop`: whether anvil ended on its SIGTERM (its state written), not killed or crashed. */
  exitedCleanly(): boolean;
}

/**
 * Starts anvil from the `@foundry-rs/anvil` npm package on 127.0.0.1. The binary is spawned directly
 * (the package's wrapper script and `prool` need more than Node 20 offers).
 *
 * Anvil must never outlive the gateway, or it would hold the port and the state file:
 * - a normal close stops it (SIGTERM, so it writes its state);
 * - a `process.exit` stops it from an 'exit' hook;
 * - a gateway killed outright (SIGKILL, crash) cannot run hooks, so a tiny `sh` watchdog holds the
 *   read end of a pipe only the gateway writes to: when the gateway dies, the pipe closes and the
 *   watchdog sends anvil SIGTERM.
 * Both run in their own process group, so a Ctrl-C in the terminal reaches only the gateway, which
 * then drains requests before stopping anvil.
 */
export async function startAnvil(options: AnvilOptions): Promise<AnvilProcess> {
  const args = ['--host', '127.0.0.1', '--port', String(options.port), '--chain-id', String(ANVIL_CHAIN_ID)];
  if (options.stateFile !== undefined) args.push('--state', options.stateFile);
  if (options.stateFile !== undefined && options.stateIntervalSeconds !== undefined) {
    args.push('--state-interval', String(options.stateIntervalSeconds));
  }
  if (options.blockTimeSeconds !== undefined && options.blockTimeSeconds > 0) {
    args.push('--block-time', String(options.blockTimeSeconds), '--mixed-mining');
    if (options.slotsInAnEpoch !== undefined)
      args.push('--slots-in-an-epoch', String(options.slotsInAnEpoch));
  }

  const anvil = spawn(anvilBinaryPath(), args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const tail: string[] = [];
  const exited = new Promise<void>((resolve) => anvil.once('exit', () => resolve()));
  let port: number;
  try {
    port = await listeningPort(anvil, tail);
  } catch (error) {
    anvil.kill('SIGKILL');
    await exited;
    throw error;
  }
  const pid = anvil.pid as number;
  // The start's 'error' listener was a once: a later 'error' (a signal that cannot be delivered) must
  // not end the gateway, which Node does on an 'error' nobody listens to. Its end shows as 'exit'.
  anvil.on('error', () => {});
  const watchdog = startWatchdog(pid);
  const killOnExit = () => anvil.kill('SIGTERM');
  process.once('exit', killOnExit);
  // The gateway's own handles keep it running; a test that forgets to stop anvil must still end.
  anvil.unref();
  for (const stream of [anvil.stdout, anvil.stderr]) (stream as { unref?: () => void } | null)?.unref?.();

  let stopping: Promise<void> | undefined;
  return {
    rpcUrl: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    port,
    pid,
    exitedCleanly: () => anvil.exitCode === 0,
    stop: () => {
      stopping ??= (async () => {
        process.off('exit', killOnExit);
        // The watchdog goes first, so it can never signal a pid the system has since reused.
        watchdog.kill('SIGKILL');
        if (anvil.exitCode !== null || anvil.signalCode !== null) return;
        anvil.kill('SIGTERM');
        const timer = setTimeout(() => anvil.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}

/** The anvil executable inside the platform package `@foundry-rs/anvil` depends on. */
export function anvilBinaryPath(): string {
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch as string];
  const platformPackage = `@foundry-rs/anvil-${process.platform}-${arch ?? process.arch}`;
  const anvilPackage = createRequire(import.meta.url).resolve('@foundry-rs/anvil/package.json');
  let packageDir: string;
  try {
    packageDir = dirname(createRequire(anvilPackage).resolve(`${platformPackage}/package.json`));
  } catch (error) {
    throw new Error(`anvil has no binary for ${process.platform}/${process.arch} (${platformPackage})`, {
      cause: error,
    });
  }
  const binary = join(packageDir, 'bin', process.platform === 'win32' ? 'anvil.exe' : 'anvil');
  if (!existsSync(binary)) throw new Error(`the anvil binary is missing: ${binary}; run npm install`);
  return binary;
}

/** Reads anvil's output until it prints `Listening on 127.0.0.1:<port>`; keeps draining it afterwards. */
function listeningPort(anvil: ChildProcess, tail: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => fail(`anvil did not start listening within ${START_TIMEOUT_MS / 1000} s`),
      START_TIMEOUT_MS,
    );
    const fail = (message: string) => {
      clearTimeout(timer);
      const output = tail.join('\n').trim();
      reject(new Error(output === '' ? message : `${message}:\n${output}`));
    };
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > OUTPUT_TAIL_LINES) tail.shift();
      const match = /Listening on 127\.0\.0\.1:(\d+)/.exec(line);
      if (match !== null) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    // Anvil prints every mined block; the pipes are drained for as long as it runs, or it would block.
    for (const stream of [anvil.stdout, anvil.stderr]) {
      let pending = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        const lines = (pending + chunk).split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) onLine(line);
      });
    }
    anvil.once('error', (error) => fail(`anvil could not be started: ${error.message}`));
    anvil.once('exit', (code, signal) => fail(`anvil exited during start (${signal ?? `code ${code}`})`));
  });
}

/**
 * `sh` waits for end-of-file on its stdin, a pipe whose only writer is this process; the kernel closes
 * it however this process ends, and the watchdog then stops anvil.
 */
function startWatchdog(anvilPid: number): ChildProcess {
  const watchdog = spawn('/bin/sh', ['-c', 'read _ignored; kill -TERM "$0" 2>/dev/null', String(anvilPid)], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  watchdog.on('error', () => {
    // No sh (not a POSIX system): the exit hook and close() still stop anvil.
  });
  watchdog.unref();
  (watchdog.stdin as { unref?: () => void } | null)?.unref?.();
  return watchdog;
}
