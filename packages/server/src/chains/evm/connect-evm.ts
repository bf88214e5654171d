import { createPublicClient, http } from 'viem';
import type { Config } from '../../config.ts';
import type { NetworkId } from '../../domain/network.ts';
import { ChainError } from '../chain-error.ts';
import type { EmbeddedEvm } from './embedded-evm.ts';
import { startEmbeddedEvm } from './embedded-evm.ts';
import { EvmAdapter } from './evm-adapter.ts';
import { toChainError } from './evm-errors.ts';
import { KNOWN_EVM_CHAINS, knownTokens, WEI_DECIMALS } from './evm-networks.ts';

export interface EvmConnection {
  readonly adapters: readonly EvmAdapter[];
  /** Set when gate402 started its own chain. */
  readonly embedded: EmbeddedEvm | undefined;
  close(): Promise<void>;
}

type EvmConfig = Pick<Config, 'evmRpcUrls' | 'anvilPort' | 'anvilBlockTime' | 'dataDir'>;

/**
 * The EVM networks gate402 talks to: those in EVM_RPC_URLS (the first is the default), each checked to
 * answer with the chain id its CAIP-2 id names; or else an embedded anvil with the USDC-like token.
 */
export async function connectEvm(config: EvmConfig, log: (message: string) => void): Promise<EvmConnection> {
  if (config.evmRpcUrls.length > 0) {
    const adapters = await Promise.all(
      config.evmRpcUrls.map(({ id, rpcUrl }, index) => connectRemote(id, rpcUrl, index === 0)),
    );
    return { adapters, embedded: undefined, close: async () => void (await closeAll(adapters)) };
  }
  const embedded = await startEmbeddedEvm({
    port: config.anvilPort,
    dataDir: config.dataDir,
    blockTimeSeconds: config.anvilBlockTime,
  });
  log(
    `embedded EVM chain (anvil): RPC ${embedded.anvil.rpcUrl}, ${embedded.adapter.info.id}, ` +
      `USDC ${embedded.usdc.address}${embedded.usdc.deployed ? ' (deployed now)' : ''}`,
  );
  return { adapters: [embedded.adapter], embedded, close: () => embedded.close() };
}

async function connectRemote(id: NetworkId, rpcUrl: string, isDefault: boolean): Promise<EvmAdapter> {
  const chainId = Number(id.slice('eip155:'.length));
  const actual = await createPublicClient({ transport: http(rpcUrl, { retryCount: 1 }) })
    .getChainId()
    .catch((error: unknown) => {
      throw toChainError(error);
    });
  if (actual !== chainId) {
    // The URL is not echoed: it may hold an API key.
    throw new ChainError('rejected', `the RPC endpoint for ${id} serves chain id ${actual}, not ${chainId}`);
  }
  const known = KNOWN_EVM_CHAINS[chainId];
  return new EvmAdapter({
    info: {
      id,
      family: 'evm',
      name: known?.name ?? `EVM chain ${chainId}`,
      nativeCurrency: { symbol: known?.nativeSymbol ?? 'ETH', decimals: WEI_DECIMALS },
      isDefault,
      isLocal: false,
      rpcUrl,
      wsUrl: undefined,
      tokens: knownTokens(chainId),
    },
    rpcUrl,
    chainId,
  });
}

async function closeAll(adapters: readonly EvmAdapter[]): Promise<void> {
  await Promise.all(adapters.map((a) => a.close()));
}
