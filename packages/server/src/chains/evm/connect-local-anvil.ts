import { ANVIL_CHAIN_ID, recordedUsdcLike } from '@gate402/anvil';
import { createPublicClient } from 'viem';
import type { RpcLimits } from '../rpc-endpoints.ts';
import { createAnvilClient } from './anvil-client.ts';
import { anvilAdapter, anvilEndpoints, anvilFiles } from './embedded-evm.ts';
import type { EvmAdapter } from './evm-adapter.ts';
import { toChainError } from './evm-errors.ts';
import { evmNetworkId } from './evm-networks.ts';
import { failoverTransport } from './failover-transport.ts';

export interface LocalAnvil {
  /** With a faucet, as the gateway's embedded chain has, or undefined when what answers is not anvil. */
  readonly adapter: EvmAdapter | undefined;
  /** Why tokens cannot be minted on this chain; undefined when they can. */
  readonly tokensRefused: string | undefined;
}

/**
 * The anvil another process runs (`gate402 serve`), with the same faucet as the embedded chain's: its
 * first dev account pays ETH and mints the USDC-like token recorded in `DATA_DIR/anvil/deployments.json`.
 * Anything that is not anvil with chain id 31337 gets no adapter. Throws ChainError `unavailable` when
 * nothing answers within `rpcLimits.timeoutMs` (RPC_TIMEOUT_MS; absent: the default).
 */
export async function connectLocalAnvil(options: {
  rpcUrl: string;
  dataDir: string;
  rpcLimits?: RpcLimits | undefined;
}): Promise<LocalAnvil> {
  const endpoints = anvilEndpoints(options.rpcUrl, options.rpcLimits);
  const client = createAnvilClient(endpoints);
  try {
    const [chainId, version] = await Promise.all([
      client.getChainId(),
      // The test client's request type knows only anvil's own methods; this one is standard.
      createPublicClient({ transport: failoverTransport(endpoints, endpoints.timeoutMs) }).request({
        method: 'web3_clientVersion',
      }),
    ]);
    if (chainId !== ANVIL_CHAIN_ID || !String(version).startsWith('anvil')) {
      return { adapter: undefined, tokensRefused: undefined };
    }
    const [operator] = await client.getAddresses();
    if (operator === undefined) return { adapter: undefined, tokensRefused: undefined };
    const network = evmNetworkId(ANVIL_CHAIN_ID);
    const { deploymentsFile } = anvilFiles(options.dataDir);
    const usdc = await recordedUsdcLike(client, { recordFile: deploymentsFile, network });
    return {
      adapter: anvilAdapter({ rpcUrl: options.rpcUrl, wsUrl: undefined, client, endpoints, operator, usdc }),
      tokensRefused:
        usdc === undefined
          ? `${deploymentsFile} names no USDC-like token on this chain (tokens are minted only on the gateway's own anvil)`
          : undefined,
    };
  } catch (error) {
    throw toChainError(error);
  }
}
