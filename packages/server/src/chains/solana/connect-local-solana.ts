import { readFile } from 'node:fs/promises';
import {
  address,
  appendTransactionMessageInstructions,
  createKeyPairSignerFromBytes,
  createSolanaRpcFromTransport,
  createTransactionMessage,
  getBase64Encoder,
  getTransactionEncoder,
  type KeyPairSigner,
  type Lamports,
  pipe,
  type Rpc,
  type SolanaRpcApi,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
} from '@solana/kit';
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getMintToCheckedInstruction,
} from '@solana-program/token';
import type { NetworkInfo, TokenInfo } from '../../domain/network.ts';
import type { LocalFaucet } from '../chain-adapter.ts';
import { ChainError } from '../chain-error.ts';
import {
  DEFAULT_RPC_DOWN_MS,
  DEFAULT_RPC_TIMEOUT_MS,
  RpcEndpoints,
  type RpcLimits,
} from '../rpc-endpoints.ts';
import { failoverTransport } from './failover-transport.ts';
import { decodeMintAccount, TOKEN_PROGRAM } from './mint-account.ts';
import { SolanaAdapter } from './solana-adapter.ts';
import { toChainError } from './solana-errors.ts';
import { KNOWN_SOLANA_CLUSTERS, LAMPORTS_DECIMALS, solanaNetworkId } from './solana-networks.ts';

/** How long a faucet transfer may take to reach `confirmed`. */
const CONFIRM_TIMEOUT_MS = 30_000;
/** spl-token's Mint::LEN, and where the mint authority's key sits in it (after the COption tag). */
const MINT_SIZE = 82n;
const MINT_AUTHORITY_OFFSET = 4n;

export interface LocalSolanaOptions {
  /** In order of preference, with failover (SOLANA_RPC_URL's list); the first is shown to callers. */
  readonly rpcUrls: readonly [string, ...string[]];
  readonly wsUrl: string | undefined;
  /** The USDC-like mint's authority, as the localnet writes it (solana-keygen 64-byte JSON array). */
  readonly mintAuthorityFile: string;
  /** How the network is shown; default "Solana Localnet". */
  readonly name?: string;
  /** The chain's slot length when known (0: manual slots); otherwise it is measured. */
  readonly slotMs?: number;
  /** Time limits and metrics of every RPC call (the faucet's too); absent: the defaults, unwatched. */
  readonly rpcLimits?: RpcLimits | undefined;
}

export interface LocalSolana {
  /** Local (`info.isLocal`, with a faucet) unless the genesis hash is a public cluster's. */
  readonly adapter: SolanaAdapter;
  /** Why tokens cannot be minted on this chain; undefined when they can. */
  readonly tokensRefused: string | undefined;
}

/**
 * A Solana chain some other process runs (`gate402 serve`, `gate402 localnet`, a test validator), with a
 * faucet that goes through its JSON-RPC only: SOL by `requestAirdrop`, the USDC-like token by MintToChecked
 * signed with the mint authority the localnet keeps in its ledger directory. A chain whose genesis is
 * mainnet's, devnet's or testnet's is never local, whatever answers at the URL.
 * Throws ChainError `unavailable` when no endpoint answers within the time limit.
 */
export async function connectLocalSolana(options: LocalSolanaOptions): Promise<LocalSolana> {
  const [rpcUrl] = options.rpcUrls;
  const limits: RpcLimits = options.rpcLimits ?? {
    timeoutMs: DEFAULT_RPC_TIMEOUT_MS,
    downMs: DEFAULT_RPC_DOWN_MS,
  };
  const endpointsOf = (network: string) => new RpcEndpoints({ network, urls: options.rpcUrls, ...limits });
  // The network's id is not known before its genesis hash: the first call is counted under the family.
  const genesisHash = await createSolanaRpcFromTransport(failoverTransport(endpointsOf('solana')))
    .getGenesisHash()
    .send()
    .catch((error: unknown) => {
      throw toChainError(error);
    });
  const id = solanaNetworkId(genesisHash);
  const known = KNOWN_SOLANA_CLUSTERS[id.slice('solana:'.length)];
  const info = (tokens: TokenInfo[]): NetworkInfo => ({
    id,
    family: 'solana',
    name: known?.name ?? options.name ?? 'Solana Localnet',
    nativeCurrency: { symbol: 'SOL', decimals: LAMPORTS_DECIMALS },
    isDefault: true,
    isLocal: known === undefined,
    rpcUrl,
    wsUrl: options.wsUrl,
    tokens,
  });
  // One list for the adapter and the faucet's own calls, so both fail over and give up alike.
  const endpoints = endpointsOf(id);
  const rpc = createSolanaRpcFromTransport(failoverTransport(endpoints));
  if (known !== undefined) {
    const adapter = new SolanaAdapter({
      info: info([]),
      rpcUrl,
      wsUrl: options.wsUrl,
      endpoints,
    });
    return { adapter, tokensRefused: `${known.name} is not a local chain` };
  }

  const usdc = await findUsdcLike(rpc, options.mintAuthorityFile);
  let adapter: SolanaAdapter;
  /** A faucet transfer counts once confirmed, so a balance read right after sees it. */
  const confirmed = async (signature: string, lastValidBlockHeight: bigint): Promise<string> => {
    const outcome = await adapter.waitForConfirmation(signature, lastValidBlockHeight, CONFIRM_TIMEOUT_MS);
    if (outcome.status === 'confirmed' || outcome.status === 'finalized') return signature;
    const why = outcome.status === 'failed' ? `failed: ${outcome.error}` : `is ${outcome.status}`;
    // Not known yet (the chain stopped answering, or is slow) is a chain that is unavailable, not a refusal.
    const kind = outcome.status === 'pending' ? 'unavailable' : 'rejected';
    throw new ChainError(kind, `faucet transaction ${signature} ${why}`);
  };
  const faucet: LocalFaucet = {
    fundNative: async (to, lamports) => {
      const signature = await rpc
        .requestAirdrop(address(to), lamports as Lamports, { commitment: 'confirmed' })
        .send()
        .catch((error: unknown) => {
          throw toChainError(error);
        });
      // An airdrop is a transfer from the faucet account; it has no blockhash of the caller's to expire.
      return confirmed(signature, BigInt(Number.MAX_SAFE_INTEGER));
    },
    fundToken: async (symbol, owner, amount) => {
      if (!('mint' in usdc) || symbol !== usdc.token.symbol) {
        throw new ChainError('rejected', `no token ${symbol} to mint on this network`);
      }
      const { value: blockhash } = await rpc
        .getLatestBlockhash({ commitment: 'confirmed' })
        .send()
        .catch((error: unknown) => {
          throw toChainError(error);
        });
      const mint = address(usdc.token.address);
      const [tokenAccount] = await findAssociatedTokenPda({
        owner: address(owner),
        mint,
        tokenProgram: address(TOKEN_PROGRAM),
      });
      const message = pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayerSigner(usdc.mint.authority, m),
        (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
        (m) =>
          appendTransactionMessageInstructions(
            [
              // Idempotent: the owner's token account is created by the first grant, reused by the next.
              getCreateAssociatedTokenIdempotentInstruction({
                payer: usdc.mint.authority,
                ata: tokenAccount,
                owner: address(owner),
                mint,
              }),
              getMintToCheckedInstruction({
                mint,
                token: tokenAccount,
                mintAuthority: usdc.mint.authority,
                amount,
                decimals: usdc.token.decimals,
              }),
            ],
            m,
          ),
      );
      const signed = await signTransactionMessageWithSigners(message);
      const signature = await adapter.broadcast(new Uint8Array(getTransactionEncoder().encode(signed)));
      return confirmed(signature, blockhash.lastValidBlockHeight);
    },
  };
  adapter = new SolanaAdapter({
    info: info('mint' in usdc ? [usdc.token] : []),
    rpcUrl,
    wsUrl: options.wsUrl,
    endpoints,
    faucet,
    ...(options.slotMs === undefined ? {} : { slotMs: options.slotMs }),
  });
  return { adapter, tokensRefused: 'refused' in usdc ? usdc.refused : undefined };
}

type UsdcLike =
  | { readonly token: TokenInfo; readonly mint: { readonly authority: KeyPairSigner } }
  | { readonly refused: string };

/**
 * The localnet's USDC-like mint, found on the chain itself: the one SPL Token mint whose authority is the
 * key in `file`. So the key and the chain are checked against each other, and a key file that belongs to
 * another ledger mints nothing.
 */
async function findUsdcLike(rpc: Rpc<SolanaRpcApi>, file: string): Promise<UsdcLike> {
  let authority: KeyPairSigner;
  try {
    authority = await createKeyPairSignerFromBytes(await readKeypairFile(file));
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no' : 'an unreadable';
    return {
      refused: `${why} USDC mint authority at ${file} (tokens are minted only on the gateway's own localnet)`,
    };
  }
  const accounts = await rpc
    .getProgramAccounts(address(TOKEN_PROGRAM), {
      encoding: 'base64',
      filters: [
        { dataSize: MINT_SIZE },
        { memcmp: { offset: MINT_AUTHORITY_OFFSET, bytes: authority.address, encoding: 'base58' } },
      ],
    })
    .send()
    .catch((error: unknown) => {
      throw toChainError(error);
    });
  const mints = accounts.flatMap(({ pubkey, account }) => {
    const mint = decodeMintAccount(new Uint8Array(getBase64Encoder().encode(account.data[0])), TOKEN_PROGRAM);
    return mint?.mintAuthority === authority.address ? [{ address: pubkey, decimals: mint.decimals }] : [];
  });
  const [mint, ...others] = mints;
  if (mint === undefined || others.length > 0) {
    return {
      refused: `the chain has ${mints.length === 0 ? 'no mint' : 'several mints'} whose authority is the key in ${file}`,
    };
  }
  return {
    token: { symbol: 'USDC', address: mint.address, decimals: mint.decimals },
    mint: { authority },
  };
}

async function readKeypairFile(file: string): Promise<Uint8Array> {
  const bytes: unknown = JSON.parse(await readFile(file, 'utf8'));
  if (
    !Array.isArray(bytes) ||
    bytes.length !== 64 ||
    !bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256)
  ) {
    throw new Error(`${file} is not a 64-byte keypair file`);
  }
  return new Uint8Array(bytes as number[]);
}
