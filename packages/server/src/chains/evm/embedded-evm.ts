import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ANVIL_CHAIN_ID,
  AnvilJournal,
  type AnvilProcess,
  ensurePermit2,
  ensureUptoPermit2Proxy,
  ensureUsdcLike,
  readJournal,
  replayJournal,
  startAnvil,
} from '@gate402/anvil';
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
import type { ChainDurability } from './chain-durability.ts';
import { EvmAdapter } from './evm-adapter.ts';
import { evmNetworkId, WEI_DECIMALS } from './evm-networks.ts';

/** Seconds between anvil's state dumps: the most a hard kill of anvil itself can lose. */
const STATE_INTERVAL_SECONDS = 5;
/**
 * With a block time, anvil's `finalized` block trails the latest by 2 (twice this): a payment on a
 * quiet embedded chain is finalized (and `payment.finalized` fires) about two block times after it
 * is mined, instead of 64 blocks later. A local chain has no reorgs, so the depth is only a delay.
 */
const SLOTS_IN_AN_EPOCH = 1;

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
  /** Where the journal's replay and follower report; absent: stderr. */
  readonly log?: ((message: string) => void) | undefined;
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
  const log = options.log ?? ((message: string) => console.error(message));
  await mkdir(files.dir, { recursive: true });
  // Blocks a hard kill of anvil lost (mined after its last state write) are mined again first, by an
  // anvil without interval mining, which writes its state when stopped (@gate402/anvil's journal).
  const journaled = readJournal(files.journalFile);
  if (journaled.length > 0) {
    const replayer = await startAnvil({ port: 0, stateFile: files.stateFile });
    try {
      const replay = await replayJournal(replayer.rpcUrl, journaled, log);
      if (replay.blocks > 0)
        log(
          `embedded EVM chain: ${replay.blocks} blocks lost by a crash mined again from the journal ` +
            `(${replay.replayed} transactions${replay.skipped > 0 ? `, ${replay.skipped} not replayable` : ''})`,
        );
    } finally {
      await replayer.stop();
    }
  }
  // Blocks this anvil mines have timestamps from now on; the loaded ones are older (or, after a
  // restart within the same second, journaled once more, which a replay skips).
  const startedAt = BigInt(Math.floor(Date.now() / 1000));
  let journal: AnvilJournal | undefined;
  const anvil = await startAnvil({
    port: options.port,
    stateFile: files.stateFile,
    stateIntervalSeconds: STATE_INTERVAL_SECONDS,
    blockTimeSeconds: options.blockTimeSeconds,
    slotsInAnEpoch: SLOTS_IN_AN_EPOCH,
  });
  try {
    const id = evmNetworkId(ANVIL_CHAIN_ID);
    const endpoints = anvilEndpoints(anvil.rpcUrl, options.rpcLimits);
    const client = createAnvilClient(endpoints);
    let loaded = await client.getBlockNumber();
    while (loaded > 0n && (await client.getBlock({ blockNumber: loaded })).timestamp >= startedAt) loaded--;
    journal = new AnvilJournal(files.journalFile, anvil.rpcUrl, loaded, log, files.stateFile);
    const durable = journal;
    const [operator] = await client.getAddresses();
    if (operator === undefined) throw new Error('anvil has no dev account');
    const usdc = await ensureUsdcLike(client, {
      owner: operator,
      recordFile: files.deploymentsFile,
      network: id,
    });
    // Permit2 and x402's proxy at their canonical addresses, so `exact` Permit2 payments settle here too.
    await ensurePermit2(client, { deployer: operator });
    // And x402's `upto` proxy, so `upto` payments (sign a maximum, settle the actual amount) settle here.
    await ensureUptoPermit2Proxy(client);
    const adapter = anvilAdapter({
      rpcUrl: anvil.rpcUrl,
      wsUrl: anvil.wsUrl,
      client,
      operator,
      usdc: usdc.address,
      pollIntervalMs: options.pollIntervalMs ?? 100,
      endpoints,
      durability: durable,
    });
    return {
      anvil,
      adapter,
      usdc,
      operator,
      close: async () => {
        await adapter.close();
        durable.close();
        await anvil.stop();
        // anvil wrote its whole state on SIGTERM: nothing is left to replay (if it was killed
        // instead, its exit came without a write, and the journal stays).
        if (anvil.exitedCleanly()) durable.truncate();
      },
    };
  } catch (error) {
    await anvil.stop();
    journal?.close();
    throw error;
  }
}

/** Where the embedded chain keeps its files: anvil's state, and the token record other tools read. */
export function anvilFiles(dataDir: string): {
  dir: string;
  stateFile: string;
  deploymentsFile: string;
  journalFile: string;
} {
  const dir = join(dataDir, 'anvil');
  return {
    dir,
    stateFile: join(dir, 'state.json'),
    deploymentsFile: join(dir, 'deployments.json'),
    journalFile: join(dir, 'journal.ndjson'),
  };
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
  /** The embedded anvil's journal, which reports of a landing (or an absence) wait for. */
  durability?: ChainDurability;
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
      options.durability,
    ),
    ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
    ...(options.durability === undefined ? {} : { durability: options.durability }),
  });
}
