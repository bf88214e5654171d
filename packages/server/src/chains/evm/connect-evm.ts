import { createPublicClient } from 'viem';
import type { Config } from '../../config.ts';
import type { NetworkId } from '../../domain/network.ts';
import { ChainError } from '../chain-error.ts';
import { RpcEndpoints, type RpcLimits, type RpcObserver } from '../rpc-endpoints.ts';
import type { EmbeddedEvm } from './embedded-evm.ts';
import { startEmbeddedEvm } from './embedded-evm.ts';
import { EvmAdapter } from './evm-adapter.ts';
import { toChainError } from './evm-errors.ts';
import { KNOWN_EVM_CHAINS, knownTokens, WEI_DECIMALS } from './evm-networks.ts';
import { failoverTransport } from './failover-transport.ts';

export interface EvmConnection {
  readonly adapters: readonly EvmAdapter[];
  /** Set when gate402 started its own chain. */
  readonly embedded: EmbeddedEvm | undefined;
  close(): Promise<void>;
}

type EvmConfig = Pick<
  Config,
  'evmRpcUrls' | 'anvilPort' | 'anvilBlockTime' | 'dataDir' | 'rpcTimeoutMs' | 'rpcDownMs'
>;

/**
 * The EVM networks gate402 talks to: those in EVM_RPC_URLS (the first is the default), each checked to
 * answer with the chain id its CAIP-2 id names; or else an embedded anvil with the USDC-like token.
 */
export async function connectEvm(
  config: EvmConfig,
  log: (message: string) => void,
  rpcObserver?: RpcObserver,
): Promise<EvmConnection> {
  const limits: RpcLimits = {
    timeoutMs: config.rpcTimeoutMs,
    downMs: config.rpcDownMs,
    observer: rpcObserver,
  };
  if (config.evmRpcUrls.length > 0) {
    const adapters = await Promise.all(
      config.evmRpcUrls.map(({ id, rpcUrls }, index) => connectRemote(id, rpcUrls, index === 0, limits)),
    );
    return { adapters, embedded: undefined, close: async () => void (await closeAll(adapters)) };
  }
  const embedded = await startEmbeddedEvm({
    port: config.anvilPort,
    dataDir: config.dataDir,
    blockTimeSeconds: config.anvilBlockTime,
    rpcLimits: limits,
  });
  log(
    `embedded EVM chain (anvil): RPC ${embedded.anvil.rpcUrl}, ${embedded.adapter.info.id}, ` +
      `USDC ${embedded.usdc.address}${embedded.usdc.deployed ? ' (deployed now)' : ''}`,
  );
  return { adapters: [embedded.adapter], embedded, close: () => embedded.close() };
}

async function connectRemote(
  id: NetworkId,
  rpcUrls: readonly string[],
  isDefault: boolean,
  limits: RpcLimits,
): Promise<EvmAdapter> {
  const chainId = Number(id.slice('eip155:'.length));
  const endpoints = new RpcEndpoints({ network: id, urls: rpcUrls, ...limits });
  // Every endpoint is asked, so a backup that serves another chain is found now, not at failover. One
  // that does not answer is tolerated (failover skips it until it does) unless none answers.
  const answers = await Promise.allSettled(
    rpcUrls.map((url) =>
      createPublicClient({
        transport: failoverTransport(
          new RpcEndpoints({ network: id, urls: [url], ...limits }),
          limits.timeoutMs,
        ),
      }).getChainId(),
    ),
  );
  const served = answers.flatMap((answer, index) =>
    answer.status === 'fulfilled' ? [{ index, chainId: answer.value }] : [],
  );
  if (served.length === 0) {
    const [first] = answers;
    throw toChainError(first?.status === 'rejected' ? first.reason : undefined);
  }
  for (const { index, chainId: actual } of served) {
    if (actual !== chainId) {
      // The URL is not echoed: it may hold an API key.
      const which = rpcUrls.length === 1 ? 'the RPC endpoint' : `RPC endpoint ${index + 1}`;
      throw new ChainError('rejected', `${which} for ${id} serves chain id ${actual}, not ${chainId}`);
    }
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
      rpcUrl: endpoints.primaryUrl,
      wsUrl: undefined,
      tokens: knownTokens(chainId),
    },
    rpcUrl: endpoints.primaryUrl,
    endpoints,
    rpcTimeoutMs: limits.timeoutMs,
    chainId,
  });
}

async function closeAll(adapters: readonly EvmAdapter[]): Promise<void> {
  await Promise.all(adapters.map((a) => a.close()));
}
