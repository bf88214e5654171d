import { type EmbeddedEvm, startEmbeddedEvm } from '../../src/chains/evm/embedded-evm.ts';
import { tempDir } from './databases.ts';

export interface TestEvm extends EmbeddedEvm {
  readonly dataDir: string;
  /** Stops anvil and the adapter; the data directory stays for a restart until `dispose`. */
  close(): Promise<void>;
  dispose(): void;
}

/** The embedded EVM chain on a free port with its own temporary DATA_DIR, as `npm start` runs it. */
export async function startTestEvm(dataDir?: string): Promise<TestEvm> {
  const dir = dataDir === undefined ? tempDir('gate402-evm-') : { path: dataDir, dispose: () => {} };
  const evm = await startEmbeddedEvm({ port: 0, dataDir: dir.path, pollIntervalMs: 20 });
  return { ...evm, dataDir: dir.path, close: () => evm.close(), dispose: () => dir.dispose() };
}
