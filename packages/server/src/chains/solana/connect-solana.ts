import { join } from 'node:path';
import type { Localnet } from '@gate402/localnet';
import { createSolanaRpcFromTransport } from '@solana/kit';
import type { Config } from '../../config.ts';
import type { NetworkInfo, TokenInfo } from '../../domain/network.ts';
import type { LocalFaucet } from '../chain-adapter.ts';
import { ChainError } from '../chain-error.ts';
import { RpcEndpoints, type RpcLimits, type RpcObserver } from '../rpc-endpoints.ts';
import { connectLocalSolana } from './connect-local-solana.ts';
import { failoverTransport } from './failover-transport.ts';
import { startLocalnetProcess } from './localnet-process.ts';
import { SolanaAdapter } from './solana-adapter.ts';
import { toChainError } from './solana-errors.ts';
import { KNOWN_SOLANA_CLUSTERS, LAMPORTS_DECIMALS, solanaNetworkId } from './solana-networks.ts';

export interface SolanaConnection {
  readonly adapter: SolanaAdapter;
  close(): Promise<void>;
}

const EMBEDDED_LOCALNET_NAME = 'Solana Localnet (embedded)';

type SolanaConfig = Pick<
  Config,
  | 'solanaRpcUrls'
  | 'solanaWsUrls'
  | 'localnetPort'
  | 'localnetSlotMs'
  | 'dataDir'
  | 'rpcTimeoutMs'
  | 'rpcDownMs'
>;

/**
 * The Solana network gate402 talks to: the endpoint in SOLANA_RPC_URL, or else an embedded localnet in a
 * process of its own (ledger in DATA_DIR/localnet, so balances and history survive restarts) with a
 * faucet.
 */
export async function connectSolana(
  config: SolanaConfig,
  log: (message: string) => void,
  rpcObserver?: RpcObserver,
): Promise<SolanaConnection> {
  const limits: RpcLimits = {
    timeoutMs: config.rpcTimeoutMs,
    downMs: config.rpcDownMs,
    observer: rpcObserver,
  };
  const [rpcUrl] = config.solanaRpcUrls;
  if (rpcUrl !== undefined) {
    const urls = config.solanaRpcUrls;
    // Subscriptions fail over between these as RPC calls do between `urls`.
    const wsUrls =
      config.solanaWsUrls.length > 0 ? config.solanaWsUrls : urls.map((url) => url.replace(/^http/, 'ws'));
    const wsUrl = wsUrls[0];
    // The network's id is not known before its genesis hash: the first call is counted under the family.
    const probe = new RpcEndpoints({ network: 'solana', urls, ...limits });
    const genesisHash = await createSolanaRpcFromTransport(failoverTransport(probe))
      .getGenesisHash()
      .send()
      .catch((error: unknown) => {
        throw toChainError(error);
      });
    const id = solanaNetworkId(genesisHash);
    const known = KNOWN_SOLANA_CLUSTERS[id.slice('solana:'.length)];
    const info = networkInfo({
      id,
      name: known?.name ?? `Solana (${new URL(rpcUrl).host})`,
      isLocal: false,
      rpcUrl,
      wsUrl,
      tokens: known?.usdc === undefined ? [] : [known.usdc],
    });
    const endpoints = new RpcEndpoints({ network: id, urls, ...limits });
    const adapter = new SolanaAdapter({ info, rpcUrl, wsUrl, wsUrls, endpoints });
    return { adapter, close: () => adapter.close() };
  }

  const localnet = await startLocalnetProcess(
    { port: config.localnetPort, ledgerDir: join(config.dataDir, 'localnet'), slotMs: config.localnetSlotMs },
    (_level, message) => log(message),
  );
  log(`embedded Solana localnet: RPC ${localnet.rpcUrl}, WebSocket ${localnet.wsUrl}, ${localnet.network}`);
  try {
    const { adapter } = await connectLocalSolana({
      rpcUrls: [localnet.rpcUrl],
      wsUrl: localnet.wsUrl,
      mintAuthorityFile: localnet.mintAuthorityFile,
      name: EMBEDDED_LOCALNET_NAME,
      slotMs: config.localnetSlotMs,
      rpcLimits: limits,
    });
    return {
      adapter,
      close: async () => {
        await adapter.close();
        await localnet.close();
      },
    };
  } catch (error) {
    await localnet.close();
    throw error;
  }
}

/**
 * The adapter for a localnet started in this process, with a faucet that mints straight into it.
 * @param slotMs the localnet's slot length (0: manual slots), so expiry estimates need no measuring.
 */
export function localnetAdapter(localnet: Localnet, slotMs?: number): SolanaAdapter {
  const usdc: TokenInfo = {
    symbol: localnet.usdcMint.symbol,
    address: localnet.usdcMint.address,
    decimals: localnet.usdcMint.decimals,
  };
  const info = networkInfo({
    id: localnet.network,
    name: EMBEDDED_LOCALNET_NAME,
    isLocal: true,
    rpcUrl: localnet.rpcUrl,
    wsUrl: localnet.wsUrl,
    tokens: [usdc],
  });
  /** A faucet transfer counts once confirmed, so a balance read right after sees it. */
  const confirmed = async (signature: string): Promise<string> => {
    const outcome = await adapter.waitForConfirmation(signature, BigInt(Number.MAX_SAFE_INTEGER), 30_000);
    if (outcome.status === 'confirmed' || outcome.status === 'finalized') return signature;
    throw new ChainError('unavailable', `faucet transfer ${signature} was not confirmed`);
  };
  const faucet: LocalFaucet = {
    fundNative: async (to, amount) =>
      confirmed(await refusalAsChainError(async () => localnet.airdrop(to, amount))),
    fundToken: async (symbol, owner, amount) => {
      if (symbol !== usdc.symbol) throw new ChainError('rejected', `no token ${symbol} on this network`);
      return confirmed((await refusalAsChainError(() => localnet.mintUsdc(owner, amount))).signature);
    },
  };
  const adapter = new SolanaAdapter({
    info,
    rpcUrl: localnet.rpcUrl,
    wsUrl: localnet.wsUrl,
    faucet,
    slotMs,
  });
  return adapter;
}

function networkInfo(
  fields: Pick<NetworkInfo, 'id' | 'name' | 'isLocal' | 'rpcUrl' | 'wsUrl' | 'tokens'>,
): NetworkInfo {
  return {
    ...fields,
    family: 'solana',
    nativeCurrency: { symbol: 'SOL', decimals: LAMPORTS_DECIMALS },
    isDefault: true,
  };
}

/**
 * The in-process localnet refuses a transaction by throwing its own TransactionRejected (its RPC answers
 * the same refusal as a JSON-RPC error); callers of a faucet see a ChainError either way.
 */
async function refusalAsChainError<T>(send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    if (error instanceof Error && error.name === 'TransactionRejected') {
      throw new ChainError('rejected', `the localnet refused the transaction: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
}
