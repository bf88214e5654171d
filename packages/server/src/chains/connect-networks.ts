import type { Config } from '../config.ts';
import { FAMILY_MODULES } from './chain-families.ts';
import { listedTokens } from './extra-tokens.ts';
import { NetworkRegistry } from './network-registry.ts';
import type { RpcObserver } from './rpc-endpoints.ts';

export interface ConnectedNetworks {
  readonly networks: NetworkRegistry;
  /** Closes every family's chains (stops the embedded ones). */
  close(): Promise<void>;
}

/**
 * Connects every chain family at once, as the configuration says (embedded chains or RPC endpoints);
 * if one fails, the others are closed again before the error is thrown.
 */
export async function connectNetworks(
  config: Config,
  log: (message: string) => void,
  rpcObserver?: RpcObserver,
): Promise<ConnectedNetworks> {
  const settled = await Promise.allSettled(FAMILY_MODULES.map((f) => f.connect(config, log, rpcObserver)));
  const connections = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const close = async () => {
    for (const connection of connections.reverse()) await connection.close();
  };
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed !== undefined) {
    await close().catch(() => {});
    throw failed.reason;
  }
  try {
    const adapters = connections.flatMap((c) => c.adapters);
    return {
      networks: new NetworkRegistry(adapters, await listedTokens(config.x402ExtraAssets, adapters)),
      close,
    };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}
