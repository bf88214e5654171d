import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ChainError } from '../chain-error.ts';

export interface LocalnetChildOptions {
  readonly port: number;
  readonly ledgerDir: string;
  readonly slotMs: number;
}

export type LocalnetChildMessage =
  | { type: 'ready'; rpcUrl: string; wsUrl: string; network: string; mintAuthorityFile: string }
  | { type: 'failed'; message: string }
  | { type: 'log'; level: 'info' | 'error'; message: string };

export interface RunningLocalnet {
  readonly rpcUrl: string;
  readonly wsUrl: string;
  readonly network: string;
  /** Where the localnet keeps its USDC-like mint authority (for the faucet). */
  readonly mintAuthorityFile: string;
  /** Stops the chain; its ledger is flushed before the process exits. */
  close(): Promise<void>;
}

/** How long the chain may take to open its ledger and listen. */
const START_TIMEOUT_MS = 60_000;
/** How long it may take to flush and exit when asked, before it is killed. */
const STOP_TIMEOUT_MS = 10_000;

/**
 * Starts the embedded localnet in a process of its own. It is a chain, not part of the gateway: in its
 * own process it runs on the machine's other core instead of taking turns with HTTP requests on the
 * gateway's event loop, and the gateway reaches it over JSON-RPC as it would reach any Solana node.
 * The child stops with the gateway, however the gateway stops (see localnet-child.ts).
 */
export async function startLocalnetProcess(
  options: LocalnetChildOptions,
  log: (level: 'info' | 'error', message: string) => void,
): Promise<RunningLocalnet> {
  // Compiled (dist/*.js), the child is JavaScript too; run from the TypeScript sources (the repository),
  // it runs under the same loader and export condition, found from here rather than from the cwd.
  const fromSource = import.meta.url.endsWith('.ts');
  const child = fork(
    fileURLToPath(new URL(fromSource ? './localnet-child.ts' : './localnet-child.js', import.meta.url)),
    [JSON.stringify(options)],
    {
      execArgv: fromSource ? ['--conditions=@gate402/source', '--import', import.meta.resolve('tsx')] : [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  child.on('message', (message: LocalnetChildMessage) => {
    if (message.type === 'log') log(message.level, message.message);
  });
  // A child process emits 'error' when it cannot be started, signalled or messaged; with no listener
  // Node would end the gateway with it. Its end is reported by 'exit' below.
  child.on('error', (error) => log('error', `the embedded Solana localnet process: ${error.message}`));
  const ready = await new Promise<Extract<LocalnetChildMessage, { type: 'ready' }>>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new ChainError('unavailable', 'the embedded Solana localnet did not start in time'));
    }, START_TIMEOUT_MS);
    child.on('message', (message: LocalnetChildMessage) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        resolve(message);
      } else if (message.type === 'failed') {
        clearTimeout(timer);
        reject(
          new ChainError('unavailable', `the embedded Solana localnet failed to start: ${message.message}`),
        );
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new ChainError(
          'unavailable',
          `the embedded Solana localnet exited (${signal ?? code}) before it was ready`,
        ),
      );
    });
  });
  let stopping = false;
  child.once('exit', (code, signal) => {
    if (!stopping) log('error', `the embedded Solana localnet exited unexpectedly (${signal ?? code})`);
  });
  return {
    ...ready,
    close: async () => {
      stopping = true;
      await stop(child);
    },
  };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
