import { type Localnet, startLocalnet } from '@gate402/localnet';
import { localnetAdapter } from '../../src/chains/solana/connect-solana.ts';
import type { SolanaAdapter } from '../../src/chains/solana/solana-adapter.ts';
import { CrashableGateway } from './crash-harness.ts';
import { DATABASE_URL, REDIS_URL, type TempStorage, tempDir, tempPostgres } from './databases.ts';

/**
 * Two gateway processes on one PostgreSQL schema and one Redis, as behind a load balancer, and the
 * localnet both send to. Neither process is started: a test may first set up its callers with the CLI.
 */
export interface TwoInstances {
  readonly localnet: Localnet;
  readonly chain: SolanaAdapter;
  readonly a: CrashableGateway;
  readonly b: CrashableGateway;
  /** Kills both processes, then stops the chain and removes the schema and the data directories. */
  dispose(): Promise<void>;
}

/** `settings` go on top of the shared storage and chain settings, to both instances alike. */
export async function twoInstances(settings: NodeJS.ProcessEnv = {}): Promise<TwoInstances> {
  let localnet: Localnet | undefined;
  let chain: SolanaAdapter | undefined;
  let storage: TempStorage | undefined;
  const dirs = [tempDir(), tempDir()] as const;
  const gateways: CrashableGateway[] = [];
  const dispose = async () => {
    for (const gateway of gateways) await gateway.dispose();
    await chain?.close();
    await localnet?.close();
    await storage?.dispose();
    for (const dir of dirs) dir.dispose();
  };
  try {
    localnet = await startLocalnet({ port: 0, slotMs: 50, finalizedDepth: 32 });
    chain = localnetAdapter(localnet);
    storage = await tempPostgres();
    const url = new URL(DATABASE_URL ?? '');
    if (storage.location.kind === 'postgres' && storage.location.schema !== undefined) {
      url.searchParams.set('options', `-c search_path=${storage.location.schema}`);
    }
    const shared = {
      DATABASE_URL: url.toString(),
      REDIS_URL: REDIS_URL ?? '',
      SOLANA_RPC_URL: localnet.rpcUrl,
      SOLANA_WS_URL: localnet.wsUrl,
      ANVIL_PORT: '0',
      ...settings,
    };
    const a = await CrashableGateway.create(dirs[0].path, shared);
    const b = await CrashableGateway.create(dirs[1].path, shared);
    gateways.push(a, b);
    return { localnet, chain, a, b, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}
