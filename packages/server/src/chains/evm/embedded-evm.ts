import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { NetworkInfo } from '../../domain/network.ts';
import { createAnvilClient } from './anvil-client.ts';
import { AnvilFaucet } from './anvil-faucet.ts';
import { ANVIL_CHAIN_ID, type AnvilProcess, startAnvil } from './anvil-process.ts';
import { EvmAdapter } from './evm-adapter.ts';
import { evmNetworkId, WEI_DECIMALS } from './evm-networks.ts';
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
 * again on later starts), a faucet, and the adapter for it.
 */
export async function startEmbeddedEvm(options: EmbeddedEvmOptions): Promise<EmbeddedEvm> {
  const dir = join(options.dataDir, 'anvil');
  await mkdir(dir, { recursive: true });
  const anvil = await startAnvil({
    port: options.port,
    stateFile: join(dir, 'state.json'),
    stateIntervalSeconds: STATE_INTERVAL_SECONDS,
    blockTimeSeconds: options.blockTimeSeconds,
  });
  try {
    const client = createAnvilClient(anvil.rpcUrl);
    const [operator] = await client.getAddresses();
    if (operator === undefined) throw new Error('anvil has no dev account');
    const id = evmNetworkId(ANVIL_CHAIN_ID);
    const usdc = await ensureUsdcLike(client, {
      owner: operator,
      recordFile: join(dir, 'deployments.json'),
      network: id,
    });
    const info: NetworkInfo = {
      id,
      family: 'evm',
      name: 'Anvil (embedded)',
      nativeCurrency: { symbol: 'ETH', decimals: WEI_DECIMALS },
      isDefault: true,
      isLocal: true,
      rpcUrl: anvil.rpcUrl,
      wsUrl: anvil.wsUrl,
      tokens: [{ symbol: 'USDC', address: usdc.address, decimals: 6 }],
    };
    const adapter = new EvmAdapter({
      info,
      rpcUrl: anvil.rpcUrl,
      chainId: ANVIL_CHAIN_ID,
      faucet: new AnvilFaucet(client, operator, { USDC: usdc.address }),
      pollIntervalMs: options.pollIntervalMs ?? 100,
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
