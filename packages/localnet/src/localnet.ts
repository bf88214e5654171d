// Composition: chain + faucet + USDC-like mint + JSON-RPC over HTTP + PubSub over WebSocket.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Chain } from './chain/chain.ts';
import { FAUCET_GENESIS_LAMPORTS, Faucet, LAMPORTS_PER_SOL } from './chain/faucet.ts';
import { loadOrCreateKeypair } from './keypair-file.ts';
import { placeNativeMints } from './native-mints.ts';
import { Dispatcher } from './rpc/dispatcher.ts';
import { createRpcHttpServer } from './rpc/http-server.ts';
import { PubSubServer } from './rpc/pubsub-server.ts';
import { rpcMethods } from './rpc/rpc-methods.ts';
import { mintUsdc, placeUsdcMint, USDC_DECIMALS, USDC_SYMBOL } from './usdc-mint.ts';
import { decodeBase58, encodeBase58 } from './wire/base58.ts';
import { KeypairSigner } from './wire/legacy-transaction.ts';

export interface LocalnetLogger {
  info(message: string): void;
  error(message: string, error?: unknown): void;
}

export interface LocalnetOptions {
  /** Interface to bind; default 127.0.0.1. */
  readonly host?: string;
  /** JSON-RPC port; default 8899; 0 picks a free one. */
  readonly port?: number;
  /** PubSub port; default `port + 1` (8900), or a free one when `port` is 0. */
  readonly wsPort?: number;
  /** Directory for accounts, ledger and operator keys; absent: all in memory. */
  readonly ledgerDir?: string;
  /** Slot length in ms; default 400; 0 = manual mode, slots move only with `advanceSlots`. */
  readonly slotMs?: number;
  /** Slots from processed to finalized; default 32. */
  readonly finalizedDepth?: number;
  /**
   * Test only: enables the test hooks (`dropSlots`, RPC `localnet_dropSlots`); default false.
   * They are refused on a public cluster's genesis whatever this says.
   */
  readonly testHooks?: boolean;
  readonly logger?: LocalnetLogger;
}

export interface UsdcMintInfo {
  readonly address: string;
  readonly decimals: number;
  readonly symbol: string;
}

export interface Localnet {
  readonly rpcUrl: string;
  readonly wsUrl: string;
  readonly genesisHash: string;
  /** CAIP-2 id: `solana:` and the first 32 characters of the genesis hash, as for mainnet and devnet. */
  readonly network: `solana:${string}`;
  readonly usdcMint: UsdcMintInfo;
  /** The USDC-like mint's authority (solana-keygen 64-byte form); its file is 0600 in the ledger dir. */
  readonly mintAuthority: {
    readonly address: string;
    readonly secretKey: Uint8Array;
    readonly keypairPath?: string;
  };
  /** The processed slot. */
  readonly slot: number;
  /** Mints `amount` atomic units of the USDC-like token to `owner`, creating its associated token account. */
  mintUsdc(owner: string, amount: bigint): Promise<{ signature: string; tokenAccount: string }>;
  /** Sends `lamports` from the faucet to `address` (no per-request bound); returns the signature. */
  airdrop(address: string, lamports: bigint): string;
  /** Manual mode (and tests): ends the current slot and produces `count` more. */
  advanceSlots(count: number): void;
  /**
   * Test hook (needs `testHooks`): drops the newest `count` ended slots and the open one, as a
   * cluster abandons a fork; throws DropSlotsRefused when refused. Returns the dropped slots.
   */
  dropSlots(count: number): number[];
  /** Flushes state to disk and closes every socket. */
  close(): Promise<void>;
}

/** Solana devnet's USDC mint: the default asset stock x402 packages price devnet payments in. */
export const DEVNET_USDC_MINT = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU';
const DEFAULTS = { host: '127.0.0.1', port: 8899, slotMs: 400, finalizedDepth: 32 };
const MINT_AUTHORITY_LAMPORTS = 1000n * LAMPORTS_PER_SOL;

/**
 * Starts an embedded Solana chain behind a Solana JSON-RPC (HTTP) and PubSub (WebSocket) API.
 *
 * @example
 * const localnet = await startLocalnet({ port: 0, slotMs: 0, finalizedDepth: 2 });
 * const rpc = createSolanaRpc(localnet.rpcUrl);
 * await localnet.mintUsdc(owner, 5_000_000n); // 5 USDC
 * await localnet.close();
 */
export async function startLocalnet(options: LocalnetOptions = {}): Promise<Localnet> {
  const host = options.host ?? DEFAULTS.host;
  const port = options.port ?? DEFAULTS.port;
  const slotMs = options.slotMs ?? DEFAULTS.slotMs;
  const finalizedDepth = options.finalizedDepth ?? DEFAULTS.finalizedDepth;
  if (!Number.isInteger(slotMs) || slotMs < 0) throw new RangeError('slotMs must be a non-negative integer');
  if (!Number.isInteger(finalizedDepth) || finalizedDepth < 1)
    throw new RangeError('finalizedDepth must be >= 1');
  const dir = options.ledgerDir;
  const logger = options.logger;

  const mintAuthorityPath = dir === undefined ? undefined : join(dir, 'mint-authority.json');
  if (dir !== undefined) mkdirSync(dir, { recursive: true });
  const faucetSigner = new KeypairSigner(
    loadOrCreateKeypair(dir === undefined ? undefined : join(dir, 'faucet.json')),
  );
  const authorityKeypair = loadOrCreateKeypair(mintAuthorityPath);
  const authority = new KeypairSigner(authorityKeypair);

  const chain = Chain.open(
    {
      ...(dir === undefined ? {} : { ledgerDir: dir }),
      slotMs,
      finalizedDepth,
      testHooks: options.testHooks === true,
    },
    (genesis) => {
      const system = {
        data: new Uint8Array(),
        owner: '11111111111111111111111111111111',
        executable: false,
        rentEpoch: 0n,
      };
      genesis.setAccount(faucetSigner.publicKey, { ...system, lamports: FAUCET_GENESIS_LAMPORTS });
      genesis.setAccount(authority.publicKey, { ...system, lamports: MINT_AUTHORITY_LAMPORTS });
      // At Solana devnet's USDC address: the localnet stands in for devnet (gate402's
      // X402_LOCALNET_AS_DEVNET), where stock x402 sellers' `'$0.01'` prices name that mint. A ledger
      // made before keeps the random address it was given (usdc_mint).
      const mint = decodeBase58(DEVNET_USDC_MINT) as Uint8Array;
      placeUsdcMint(genesis, mint, authority.publicKey);
      genesis.setMeta('usdc_mint', encodeBase58(mint));
      placeNativeMints(genesis);
    },
  );
  // A ledger made before the native mints were placed at genesis gets them now.
  placeNativeMints(chain);
  const usdcMint: UsdcMintInfo = {
    address: chain.getMeta('usdc_mint') as string,
    decimals: USDC_DECIMALS,
    symbol: USDC_SYMBOL,
  };
  const faucet = new Faucet(chain, faucetSigner);
  const identity = encodeBase58(createHash('sha256').update(`${chain.genesisHash}:identity`).digest());
  const dispatcher = new Dispatcher(rpcMethods, { chain, faucet, identity }, (error) =>
    (logger ?? console).error('localnet: internal error while answering an RPC request', error),
  );
  const pubsub = new PubSubServer(chain);
  const rpcServer = createRpcHttpServer(dispatcher);
  const wsServer = createServer((_req, res) =>
    res.writeHead(426, { 'content-type': 'text/plain' }).end('WebSocket only'),
  );
  // Both ports accept WebSocket upgrades: clients that derive the PubSub URL from the RPC URL work too.
  for (const server of [rpcServer, wsServer])
    server.on('upgrade', (req, socket, head) => pubsub.handleUpgrade(req, socket, head));

  try {
    await listen(rpcServer, port, host);
    const rpcPort = (rpcServer.address() as AddressInfo).port;
    await listen(wsServer, options.wsPort ?? (port === 0 ? 0 : rpcPort + 1), host);
  } catch (error) {
    chain.close();
    rpcServer.close();
    wsServer.close();
    throw error;
  }
  chain.start();

  const urlHost = host.includes(':') ? `[${host}]` : host;
  const rpcUrl = `http://${urlHost}:${(rpcServer.address() as AddressInfo).port}`;
  const wsUrl = `ws://${urlHost}:${(wsServer.address() as AddressInfo).port}`;
  logger?.info(`localnet: JSON RPC URL ${rpcUrl}, WebSocket URL ${wsUrl}, genesis hash ${chain.genesisHash}`);

  let closing: Promise<void> | undefined;
  return {
    rpcUrl,
    wsUrl,
    genesisHash: chain.genesisHash,
    network: `solana:${chain.genesisHash.slice(0, 32)}`,
    usdcMint,
    mintAuthority: {
      address: encodeBase58(authority.publicKey),
      secretKey: authorityKeypair,
      ...(mintAuthorityPath === undefined ? {} : { keypairPath: mintAuthorityPath }),
    },
    get slot() {
      return chain.slot;
    },
    mintUsdc: (owner, amount) => mintUsdc(chain, authority, usdcMint.address, owner, amount),
    airdrop: (address, lamports) => {
      const to = decodeBase58(address);
      if (to?.length !== 32) throw new TypeError(`not an address: ${address}`);
      return faucet.airdrop(to, lamports).signature;
    },
    advanceSlots: (count) => chain.advanceSlots(count),
    dropSlots: (count) => chain.dropSlots(count),
    close: () => {
      closing ??= (async () => {
        await Promise.all([pubsub.closeAll(), stop(rpcServer), stop(wsServer)]);
        chain.close();
        logger?.info('localnet: stopped');
      })();
      return closing;
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function stop(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
