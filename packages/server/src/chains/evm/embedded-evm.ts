import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Address } from 'viem';
import type { NetworkInfo } from '../../domain/network.ts';
import {
  DEFAULT_RPC_DOWN_MS,
  DEFAULT_RPC_TIMEOUT_MS,
  RpcEndpoints,
  type RpcLimits,
} from '../rpc-endpoints.ts';
import { type AnvilClient, createAnvilClient } from './anvil-client.ts';
import { AnvilFaucet } from './anvil-faucet.ts';
import { ANVIL_CHAIN_ID, type AnvilProcess, startAnvil } from './anvil-process.ts';
import { EvmAdapter } from './evm-adapter.ts';
import { evmNetworkId, WEI_DECIMALS } from './evm-networks.ts';
import { ensurePermit2 } from './permit2-deployment.ts';
import { ensureUsdcLike } from './usdc-like-deployment.ts';

/** Seconds between anvil's state dumps: the most a hard kill of anvil itself can lose. */
const STATE_INTERVAL_SECONDS = 5;

export interface EmbeddedEvmOptions {
  /** 0: any free port. */
  readonly port: number;
  /** Anvil's state and the token record live in `<dataDir>/anvil`. */
  readonly dataDir: string;
  readonly blockTimeSeconds?: number | undefined;
  /** Receipt polling while waiting for confirmations; anvil mines at once, so this can be short. */
  readonly pollIntervalMs?: number;
  /** Time limits and metrics of the adapter's RPC calls; absent: the defaults, unwatched. */
  readonly rpcLimits?: RpcLimits | undefined;
}

export interface EmbeddedEvm {
  readonly anvil: AnvilProcess;
  readonly adapter: EvmAdapter;
  readonly usdc: { readonly address: string; readonly deployed: boolean };
  /** The anvil dev account that owns the token and pays the faucet. */
  readonly operator: string;
  close(): Promise<void>;
}

/**
 * The embedded EVM chain: anvil with its state in DATA_DIR, the USDC-like token (deployed once, found
 * again on later starts), Permit2 and x402's Permit2 proxy, a faucet, and the adapter for it.
 */
export async function startEmbeddedEvm(options: EmbeddedEvmOptions): Promise<EmbeddedEvm> {
  const files = anvilFiles(options.dataDir);
  await mkdir(files.dir, { recursive: true });
  const anvil = await startAnvil({
    port: options.port,
    stateFile: files.stateFile,
    stateIntervalSeconds: STATE_INTERVAL_SECONDS,
    blockTimeSeconds: options.blockTimeSeconds,
  });
  try {
    const id = evmNetworkId(ANVIL_CHAIN_ID);
    const endpoints = anvilEndpoints(anvil.rpcUrl, options.rpcLimits);
    const client = createAnvilClient(endpoints);
    const [operator] = await client.getAddresses();
    if (operator === undefined) throw new Error('anvil has no dev account');
    const usdc = await ensureUsdcLike(client, {
      owner: operator,
      recordFile: files.deploymentsFile,
      network: id,
    });
    // Permit2 and x402's proxy at their canonical addresses, so `exact` Permit2 payments settle here too.
    await ensurePermit2(client, { deployer: operator });
    const adapter = anvilAdapter({
      rpcUrl: anvil.rpcUrl,
      wsUrl: anvil.wsUrl,
      client,
      operator,
      usdc: usdc.address,
      pollIntervalMs: options.pollIntervalMs ?? 100,
      endpoints,
    });
    return {
      anvil,
      adapter,
      usdc,
      operator,
      close: async () => {
        await adapter.close();
        await anvil.stop();
      },
    };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}

/** Where the embedded chain keeps its files: anvil's state, and the token record other tools read. */
export function anvilFiles(dataDir: string): { dir: string; stateFile: string; deploymentsFile: string } {
  const dir = join(dataDir, 'anvil');
  return { dir, stateFile: join(dir, 'state.json'), deploymentsFile: join(dir, 'deployments.json') };
}

/**
 * The one endpoint of a local anvil, with the configured time limits (absent: the defaults). The
 * adapter and the faucet's client share it, so a stalled anvil is found down once for both.
 */
export function anvilEndpoints(rpcUrl: string, limits: RpcLimits | undefined): RpcEndpoints {
  return new RpcEndpoints({
    network: evmNetworkId(ANVIL_CHAIN_ID),
    urls: [rpcUrl],
    timeoutMs: DEFAULT_RPC_TIMEOUT_MS,
    downMs: DEFAULT_RPC_DOWN_MS,
    ...limits,
  });
}

/**
 * The adapter for a local anvil, whoever started it: a faucet paid by the dev account `operator` (which
 * also owns the USDC-like token, when it is deployed) and the token in the network's list.
 * `endpoints` is the list `client` was made with.
 */
export function anvilAdapter(options: {
  rpcUrl: string;
  wsUrl: string | undefined;
  client: AnvilClient;
  endpoints: RpcEndpoints;
  operator: Address;
  usdc: Address | undefined;
  pollIntervalMs?: number;
}): EvmAdapter {
  const info: NetworkInfo = {
    id: evmNetworkId(ANVIL_CHAIN_ID),
    family: 'evm',
    name: 'Anvil (embedded)',
    nativeCurrency: { symbol: 'ETH', decimals: WEI_DECIMALS },
    isDefault: true,
    isLocal: true,
    rpcUrl: options.rpcUrl,
    wsUrl: options.wsUrl,
    tokens: options.usdc === undefined ? [] : [{ symbol: 'USDC', address: options.usdc, decimals: 6 }],
  };
  return new EvmAdapter({
    info,
    rpcUrl: options.rpcUrl,
    endpoints: options.endpoints,
    rpcTimeoutMs: options.endpoints.timeoutMs,
    chainId: ANVIL_CHAIN_ID,
    faucet: new AnvilFaucet(
      options.client,
      options.operator,
      options.usdc === undefined ? {} : { USDC: options.usdc },
    ),
    ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
  });
}
