import { setMaxListeners } from 'node:events';
import {
  AccountRole,
  type Address,
  address,
  appendTransactionMessageInstructions,
  type Base64EncodedWireTransaction,
  type Blockhash,
  compileTransaction,
  createNoopSigner,
  createSolanaRpcFromTransport,
  createTransactionMessage,
  getAddressDecoder,
  getSignatureFromTransaction,
  getTransactionDecoder,
  getTransactionEncoder,
  type Instruction,
  pipe,
  type Rpc,
  type Signature,
  type SignatureBytes,
  type SolanaRpcApi,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from '@solana/kit';
import {
  getSetComputeUnitLimitInstruction,
  getSetComputeUnitPriceInstruction,
} from '@solana-program/compute-budget';
import { getAddMemoInstruction } from '@solana-program/memo';
import { getTransferSolInstruction } from '@solana-program/system';
import { findAssociatedTokenPda } from '@solana-program/token';
import { encodeBase58 } from '../../domain/base58.ts';
import type { NetworkInfo } from '../../domain/network.ts';
import type {
  ChainAdapter,
  ChainTokenAccount,
  ChainTokenInfo,
  ChainTransaction,
  ConfirmationOutcome,
  LocalFaucet,
  PreparedTransaction,
  SignatureInfo,
  SignedTransaction,
  TransferRequest,
  TransferToken,
} from '../chain-adapter.ts';
import { ChainError } from '../chain-error.ts';
import { withDeadline } from '../deadline.ts';
import { InFlightReads } from '../in-flight-reads.ts';
import { DEFAULT_RPC_DOWN_MS, DEFAULT_RPC_TIMEOUT_MS, RpcEndpoints } from '../rpc-endpoints.ts';
import { failoverTransport } from './failover-transport.ts';
import {
  decodeMetaplexMetadata,
  METAPLEX_METADATA_PROGRAM,
  metaplexMetadataAddress,
} from './metaplex-metadata.ts';
import { decodeMintAccount, type MintAccount, TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from './mint-account.ts';
import { SignatureWatcher } from './signature-watcher.ts';
import { DEFAULT_SLOT_FEED_RETURN_MS, SlotFeed } from './slot-feed.ts';
import { toChainError } from './solana-errors.ts';
import { generateSolanaKeypair, signWithSecretKey } from './solana-keypair.ts';
import { compileTokenTransfer } from './token-transfer-transaction.ts';
import { encodeTransferTransaction, singleSignerMessage } from './transfer-transaction.ts';

/**
 * The SPL Memo program every Solana cluster runs (v2). @solana-program/memo now defaults to another
 * address, which mainnet, devnet and LiteSVM do not have, so the address is named here.
 */
export const MEMO_PROGRAM = address('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');

/** Lamports per signature, fixed by the protocol. */
const BASE_FEE_PER_SIGNATURE = 5_000n;
/**
 * Compute units reserved for a native transfer with a memo: compute-budget instructions (~300),
 * the transfer (~150) and a memo of up to a few hundred bytes (~10,000 at most). Priority fees are
 * paid on the limit, not on what is used, so it is kept close to need.
 */
const TRANSFER_COMPUTE_UNIT_LIMIT = 20_000;
/**
 * The same for a token transfer: TransferChecked (about 6,000 units on SPL Token, a few thousand more on
 * Token-2022), the memo and the compute-budget instructions; and with the recipient's associated token
 * account opened first (CreateIdempotent: about 25,000 to 35,000 more).
 */
const TOKEN_TRANSFER_COMPUTE_UNIT_LIMIT = 40_000;
const TOKEN_TRANSFER_OPENING_COMPUTE_UNIT_LIMIT = 80_000;
/** spl-token's Account layout: amount (u64) at byte 64, state (0 uninitialized, 1 initialized, 2 frozen) at 108. */
const TOKEN_ACCOUNT_AMOUNT_OFFSET = 64;
const TOKEN_ACCOUNT_STATE_OFFSET = 108;
const TOKEN_ACCOUNT_INITIALIZED = 1;
const MICRO_LAMPORTS_PER_LAMPORT = 1_000_000n;
/** The programs that own token accounts and mints: an address they own is never a wallet. */
const TOKEN_PROGRAMS: ReadonlySet<string> = new Set([TOKEN_PROGRAM, TOKEN_2022_PROGRAM]);
/** Automatic priority fee: this percentile of the recent non-zero fees on the accounts involved. */
const AUTO_FEE_PERCENTILE = 0.75;
const POLL_INTERVAL_MS = 400;
const RECENT_FEE_REUSE_MS = 2_000;
const RECENT_FEE_CACHE = 1_000;
/** Block heights of recent slots, kept for confirmations that arrive together. */
const BLOCK_HEIGHT_CACHE = 512;
/** Solana's target slot time, used when the endpoint reports no recent performance samples. */
const DEFAULT_SLOT_MS = 400;
/** How long a measured slot time is reused. */
const SLOT_TIME_TTL_MS = 60_000;

export interface SolanaAdapterOptions {
  readonly info: NetworkInfo;
  readonly rpcUrl: string;
  /**
   * Every endpoint of the network with time limits and failover; absent: `rpcUrl` alone, with the
   * default time limits.
   */
  readonly endpoints?: RpcEndpoints | undefined;
  /** PubSub URL; confirmation falls back to polling when subscriptions fail. */
  readonly wsUrl?: string | undefined;
  /** Several PubSub URLs in order of preference, with failover (SOLANA_WS_URL's list); absent: `wsUrl`. */
  readonly wsUrls?: readonly string[] | undefined;
  /** How long the slot feed stays on a fallback PubSub URL before trying the preferred ones again. */
  readonly slotFeedReturnMs?: number | undefined;
  readonly faucet?: LocalFaucet | undefined;
  /**
   * The slot time when it is known (an embedded localnet: its configured slot length; 0 = slots advance
   * only by hand, so a blockhash never expires by time). Else measured from the endpoint.
   */
  readonly slotMs?: number | undefined;
}

/** The ChainAdapter for Solana, on @solana/kit; works against any Solana JSON-RPC endpoint. */
export class SolanaAdapter implements ChainAdapter {
  readonly info: NetworkInfo;
  readonly faucet: LocalFaucet | undefined;
  readonly endpoints: RpcEndpoints;
  private readonly rpc: Rpc<SolanaRpcApi>;
  /** New slots nudge the watcher; absent without a PubSub URL (the watcher's timer alone). */
  private readonly slotFeed: SlotFeed | undefined;
  /** Aborted on close, so no wait outlives the adapter. */
  private readonly lifetime = new AbortController();
  private readonly watcher: SignatureWatcher;
  private readonly reads = new InFlightReads();
  private readonly blockHeights = new Map<bigint, bigint>();
  private readonly recentFees = new Map<string, { at: number; price: Promise<bigint> }>();
  private readonly knownSlotMs: number | undefined;
  private measuredSlotMs: { at: number; ms: Promise<number> } | undefined;

  constructor(options: SolanaAdapterOptions) {
    this.info = options.info;
    this.faucet = options.faucet;
    this.knownSlotMs = options.slotMs;
    this.endpoints =
      options.endpoints ??
      new RpcEndpoints({
        network: options.info.id,
        urls: [options.rpcUrl],
        timeoutMs: DEFAULT_RPC_TIMEOUT_MS,
        downMs: DEFAULT_RPC_DOWN_MS,
      });
    this.rpc = createSolanaRpcFromTransport(failoverTransport(this.endpoints));
    setMaxListeners(0, this.lifetime.signal);
    this.watcher = new SignatureWatcher(
      {
        statuses: (signatures) => this.statusesOf(signatures),
        blockHeight: () => this.getBlockHeight(),
        unreachable: () => this.endpoints.allDown,
      },
      POLL_INTERVAL_MS,
    );
    const wsUrls = options.wsUrls ?? (options.wsUrl === undefined ? [] : [options.wsUrl]);
    this.slotFeed =
      wsUrls.length === 0
        ? undefined
        : new SlotFeed({
            endpoints: this.endpoints.withUrls(wsUrls),
            onSlot: () => this.watcher.nudge(),
            wanted: () => this.watcher.busy,
            // Silence of ten slots, and never less than a call's time limit, means a dead subscription;
            // a localnet advanced by hand (slotMs 0) may rightly send none for long.
            silenceMs:
              options.slotMs === 0
                ? undefined
                : Math.max(this.endpoints.timeoutMs, 10 * (options.slotMs ?? DEFAULT_SLOT_MS)),
            returnAfterMs: options.slotFeedReturnMs ?? DEFAULT_SLOT_FEED_RETURN_MS,
            lifetime: this.lifetime.signal,
          });
  }

  async ping(): Promise<void> {
    await this.call(() => this.rpc.getSlot({ commitment: 'confirmed' }).send());
  }

  async getBalance(owner: string): Promise<bigint> {
    const { value } = await this.reads.share(`balance ${owner}`, () =>
      this.call(() => this.rpc.getBalance(address(owner), { commitment: 'confirmed' }).send()),
    );
    return value;
  }

  async getBlockHeight(): Promise<bigint> {
    return this.call(() => this.rpc.getBlockHeight({ commitment: 'confirmed' }).send());
  }

  /**
   * The owner's associated token account of the mint (of whichever token program owns the mint): what a
   * transfer built by prepareTransfer sends from. Both programs' accounts are read with the mint in one
   * call. A frozen account can send nothing, so it counts as 0.
   */
  async getTokenBalance(owner: string, token: string): Promise<bigint> {
    const mint = address(token);
    const [[classic], [extended]] = await Promise.all([
      findAssociatedTokenPda({ owner: address(owner), mint, tokenProgram: address(TOKEN_PROGRAM) }),
      findAssociatedTokenPda({ owner: address(owner), mint, tokenProgram: address(TOKEN_2022_PROGRAM) }),
    ]);
    const { value } = await this.call(() =>
      this.rpc
        .getMultipleAccounts([mint, classic, extended], { encoding: 'base64', commitment: 'confirmed' })
        .send(),
    );
    const [mintAccount, classicAccount, extendedAccount] = value;
    if (mintAccount == null) return 0n;
    const account = mintAccount.owner === TOKEN_2022_PROGRAM ? extendedAccount : classicAccount;
    if (account == null || account.owner !== mintAccount.owner) return 0n;
    return sendableAmount(base64Bytes(account.data));
  }

  async finalizedSlot(): Promise<bigint> {
    return this.call(() => this.rpc.getSlot({ commitment: 'finalized' }).send());
  }

  async generateKeypair(): Promise<{ address: string; secretKey: Uint8Array }> {
    return generateSolanaKeypair();
  }

  async prepareTransfer(request: TransferRequest): Promise<PreparedTransaction> {
    if (request.token !== undefined) return this.prepareTokenTransfer(request, request.token);
    const from = address(request.from);
    const to = address(request.to);
    const [[{ value: blockhash }, height], slotMs, computeUnitPrice] = await Promise.all([
      this.reads.share('blockhash', () =>
        Promise.all([
          this.call(() => this.rpc.getLatestBlockhash({ commitment: 'confirmed' }).send()),
          this.call(() => this.rpc.getBlockHeight({ commitment: 'processed' }).send()),
        ]),
      ),
      this.slotMs(),
      request.priorityFee === undefined
        ? this.recentComputeUnitPrice([from, to])
        : Promise.resolve(
            (request.priorityFee * MICRO_LAMPORTS_PER_LAMPORT) / BigInt(TRANSFER_COMPUTE_UNIT_LIMIT),
          ),
    ]);

    const unsigned =
      encodeTransferTransaction({
        from,
        to,
        reference: request.reference,
        lamports: request.amount,
        blockhash: blockhash.blockhash,
        computeUnitLimit: TRANSFER_COMPUTE_UNIT_LIMIT,
        computeUnitPrice,
        memo: request.memo,
        memoProgram: MEMO_PROGRAM,
      }) ?? compileTransfer(from, to, request, blockhash, computeUnitPrice);
    // Solana charges ceil(price × limit / 10^6) lamports of priority fee.
    const priorityFee =
      (computeUnitPrice * BigInt(TRANSFER_COMPUTE_UNIT_LIMIT) + MICRO_LAMPORTS_PER_LAMPORT - 1n) /
      MICRO_LAMPORTS_PER_LAMPORT;
    return {
      unsigned,
      lastValidBlockHeight: blockhash.lastValidBlockHeight,
      fee: BASE_FEE_PER_SIGNATURE + priorityFee,
      priorityFee,
      feePayer: from,
      // Blocks are never faster than slots (slots may be skipped), so this errs early.
      validForMs: Math.max(0, Number(blockhash.lastValidBlockHeight - height)) * slotMs,
    };
  }

  /**
   * A token transfer between the two wallets' associated token accounts (token-transfer-transaction.ts).
   * The mint is read first: its program (SPL Token or Token-2022) decides the accounts' addresses, and its
   * decimals must be the ones the caller priced the amount in. The recipient's account is opened by the
   * transfer when it is not a token account yet; its rent (less any lamports already at the address) is
   * part of `fee`, so the sender's balance check covers it.
   */
  private async prepareTokenTransfer(
    request: TransferRequest,
    token: TransferToken,
  ): Promise<PreparedTransaction> {
    const from = address(request.from);
    const to = address(request.to);
    const mint = address(token.address);
    const mintAccount = await this.readMint(mint);
    if (mintAccount === undefined)
      throw new ChainError('invalid_transaction', `${mint} is not a token mint on ${this.info.name}`);
    if (mintAccount.decoded.decimals !== token.decimals) {
      throw new ChainError(
        'invalid_transaction',
        `${mint} has ${mintAccount.decoded.decimals} decimals, not ${token.decimals}`,
      );
    }
    const tokenProgram = address(mintAccount.program);
    const [[source], [destination]] = await Promise.all([
      findAssociatedTokenPda({ owner: from, mint, tokenProgram }),
      findAssociatedTokenPda({ owner: to, mint, tokenProgram }),
    ]);
    const [[{ value: blockhash }, height], slotMs, { value: existing }, rentExempt, { value: recipient }] =
      await Promise.all([
        this.reads.share('blockhash', () =>
          Promise.all([
            this.call(() => this.rpc.getLatestBlockhash({ commitment: 'confirmed' }).send()),
            this.call(() => this.rpc.getBlockHeight({ commitment: 'processed' }).send()),
          ]),
        ),
        this.slotMs(),
        this.call(() =>
          this.rpc.getAccountInfo(destination, { encoding: 'base64', commitment: 'confirmed' }).send(),
        ),
        this.call(() =>
          this.rpc.getMinimumBalanceForRentExemption(BigInt(mintAccount.decoded.tokenAccountSize)).send(),
        ),
        this.call(() => this.rpc.getAccountInfo(to, { encoding: 'base64', commitment: 'confirmed' }).send()),
      ]);
    // Tokens are paid to the associated token account of `to`. When `to` is itself a token account (a
    // wallet's USDC account pasted instead of the wallet) or a mint, that account has an owner no key
    // signs for: the tokens could never be moved again. Refused before anything is signed.
    if (to === mint || (recipient != null && TOKEN_PROGRAMS.has(recipient.owner))) {
      throw new ChainError('recipient_refused', `${to} is owned by the token program ${recipient?.owner}`, {
        recipientProblem:
          to === mint
            ? 'is the mint of the token sent, not a wallet: tokens paid to it could never be moved'
            : 'is a token account or mint, not a wallet: tokens paid to it could never be moved (give the wallet that owns the token account)',
      });
    }
    // Anyone can send lamports to the address before it is opened; the opening then tops them up.
    const openDestination = existing == null || existing.owner !== tokenProgram;
    const held = existing == null ? 0n : existing.lamports;
    const accountRent = openDestination ? (rentExempt > held ? rentExempt - held : 0n) : 0n;
    const computeUnitLimit = openDestination
      ? TOKEN_TRANSFER_OPENING_COMPUTE_UNIT_LIMIT
      : TOKEN_TRANSFER_COMPUTE_UNIT_LIMIT;
    const computeUnitPrice =
      request.priorityFee === undefined
        ? await this.recentComputeUnitPrice([from, source, destination])
        : (request.priorityFee * MICRO_LAMPORTS_PER_LAMPORT) / BigInt(computeUnitLimit);
    const unsigned = compileTokenTransfer({
      from,
      to,
      source,
      destination,
      mint,
      tokenProgram,
      decimals: token.decimals,
      amount: request.amount,
      openDestination,
      reference: request.reference,
      memo: request.memo,
      memoProgram: MEMO_PROGRAM,
      blockhash,
      computeUnitLimit,
      computeUnitPrice,
    });
    const priorityFee =
      (computeUnitPrice * BigInt(computeUnitLimit) + MICRO_LAMPORTS_PER_LAMPORT - 1n) /
      MICRO_LAMPORTS_PER_LAMPORT;
    return {
      unsigned,
      lastValidBlockHeight: blockhash.lastValidBlockHeight,
      fee: BASE_FEE_PER_SIGNATURE + priorityFee + accountRent,
      accountRent,
      priorityFee,
      feePayer: from,
      validForMs: Math.max(0, Number(blockhash.lastValidBlockHeight - height)) * slotMs,
    };
  }

  /** A mint account and the token program that owns it; undefined when `mint` is no initialized mint. */
  private async readMint(mint: Address): Promise<{ program: string; decoded: MintAccount } | undefined> {
    const { value } = await this.call(() =>
      this.rpc.getAccountInfo(mint, { encoding: 'base64', commitment: 'confirmed' }).send(),
    );
    if (value == null) return undefined;
    const decoded = decodeMintAccount(base64Bytes(value.data), value.owner);
    return decoded === undefined ? undefined : { program: value.owner, decoded };
  }

  async sign(prepared: PreparedTransaction, secretKey: Uint8Array): Promise<SignedTransaction> {
    // The fee payer alone signs what prepareTransfer builds: its slot is the first, written in place.
    const single = singleSignerMessage(prepared.unsigned);
    if (single !== undefined && Buffer.from(single.signer).equals(secretKey.subarray(32))) {
      const signature = signWithSecretKey(secretKey, single.message);
      const wire = new Uint8Array(prepared.unsigned);
      wire.set(signature, 1);
      return {
        wire,
        signature: encodeBase58(signature),
        lastValidBlockHeight: prepared.lastValidBlockHeight,
      };
    }
    const transaction = getTransactionDecoder().decode(prepared.unsigned);
    const signer = address(getAddressDecoder().decode(secretKey.subarray(32)));
    if (!(signer in transaction.signatures)) throw new Error(`${signer} is not a signer of this transaction`);
    const signature = signWithSecretKey(
      secretKey,
      new Uint8Array(transaction.messageBytes),
    ) as SignatureBytes;
    const signed = { ...transaction, signatures: { ...transaction.signatures, [signer]: signature } };
    return {
      wire: new Uint8Array(getTransactionEncoder().encode(signed)),
      signature: getSignatureFromTransaction(signed),
      lastValidBlockHeight: prepared.lastValidBlockHeight,
    };
  }

  async broadcast(wire: Uint8Array): Promise<string> {
    const encoded = Buffer.from(wire).toString('base64') as Base64EncodedWireTransaction;
    return this.call(() =>
      this.rpc.sendTransaction(encoded, { encoding: 'base64', preflightCommitment: 'confirmed' }).send(),
    );
  }

  /**
   * Also ends, `pending`, as soon as every RPC endpoint of the network is down: nothing can be learnt
   * until one is back, and the payment is finished by the reconciler like any other unconfirmed one.
   */
  async waitForConfirmation(
    signature: string,
    lastValidBlockHeight: bigint,
    timeoutMs: number,
  ): Promise<ConfirmationOutcome> {
    this.slotFeed?.start();
    const outcome = await withDeadline(timeoutMs, this.lifetime.signal, (signal) =>
      this.watcher.wait(signature, lastValidBlockHeight, signal),
    );
    return outcome ?? { status: 'pending' };
  }

  async getSignatureStatus(signature: string): Promise<ConfirmationOutcome | undefined> {
    const [status] = await this.call(() => this.statusesOf([signature]));
    return status;
  }

  async blockHeightOf(slot: bigint): Promise<bigint> {
    const cached = this.blockHeights.get(slot);
    if (cached !== undefined) return cached;
    // Sends confirmed in the same slot ask for the same block at once.
    const block = await this.reads.share(`block ${slot}`, () =>
      this.call(() =>
        this.rpc
          .getBlock(slot, {
            commitment: 'confirmed',
            transactionDetails: 'none',
            rewards: false,
            maxSupportedTransactionVersion: 0,
          })
          .send(),
      ),
    );
    if (block === null || block.blockHeight === null)
      throw new ChainError('unavailable', `no block at slot ${slot}`);
    if (this.blockHeights.size >= BLOCK_HEIGHT_CACHE) this.blockHeights.clear();
    this.blockHeights.set(slot, block.blockHeight);
    return block.blockHeight;
  }

  async getTransaction(signature: string): Promise<ChainTransaction | undefined> {
    const tx = await this.call(() =>
      this.rpc
        .getTransaction(signature as Signature, {
          encoding: 'jsonParsed',
          maxSupportedTransactionVersion: 0,
          commitment: 'confirmed',
        })
        .send(),
    );
    if (tx === null) return undefined;
    const accounts = tx.transaction.message.accountKeys.map((k) => k.pubkey as string);
    const nativeTransfers: { from: string; to: string; amount: bigint }[] = [];
    const tokenTransfers: { token: string; from: string; to: string; amount: bigint }[] = [];
    const memos: string[] = [];
    // Token accounts → their owner and mint, as the node reports them around the transaction.
    const holders = new Map<string, { owner: string; mint: string }>();
    for (const balance of [...(tx.meta?.preTokenBalances ?? []), ...(tx.meta?.postTokenBalances ?? [])]) {
      const account = accounts[balance.accountIndex];
      if (account !== undefined && balance.owner !== undefined)
        holders.set(account, { owner: balance.owner, mint: balance.mint });
    }
    for (const ix of tx.transaction.message.instructions) {
      if (!('parsed' in ix)) continue;
      if ((ix.program === 'spl-token' || ix.program === 'spl-token-2022') && isTokenTransfer(ix.parsed)) {
        const source = holders.get(ix.parsed.info.source);
        const destination = holders.get(ix.parsed.info.destination);
        const amount = ix.parsed.info.tokenAmount?.amount ?? ix.parsed.info.amount;
        // Both sides' owners are known from the balances, and of one mint: a transfer moves one token.
        if (
          source !== undefined &&
          destination !== undefined &&
          source.mint === destination.mint &&
          amount !== undefined
        ) {
          tokenTransfers.push({
            token: source.mint,
            from: source.owner,
            to: destination.owner,
            amount: BigInt(amount),
          });
        }
      } else if (ix.program === 'system' && isTransfer(ix.parsed)) {
        nativeTransfers.push({
          from: ix.parsed.info.source,
          to: ix.parsed.info.destination,
          amount: BigInt(ix.parsed.info.lamports),
        });
      } else if (ix.program === 'spl-memo' && typeof ix.parsed === 'string') {
        memos.push(ix.parsed);
      }
    }
    return {
      signature,
      slot: tx.slot,
      blockTime: tx.blockTime === null ? null : Number(tx.blockTime) * 1000,
      fee: tx.meta?.fee ?? 0n,
      error: tx.meta?.err == null ? null : JSON.stringify(tx.meta.err, jsonBigint),
      feePayer: accounts[0] ?? '',
      nativeTransfers,
      tokenTransfers,
      memos,
      accounts,
    };
  }

  async findSignatures(owner: string, options: { limit?: number } = {}): Promise<SignatureInfo[]> {
    const found = await this.call(() =>
      this.rpc
        .getSignaturesForAddress(address(owner), { limit: options.limit ?? 100, commitment: 'confirmed' })
        .send(),
    );
    return found.map((s) => ({
      signature: s.signature,
      slot: s.slot,
      error: s.err === null ? null : JSON.stringify(s.err, jsonBigint),
    }));
  }

  /**
   * A mint of SPL Token or Token-2022, with its name, symbol and uri from Token-2022's embedded metadata
   * or else from its Metaplex metadata account; both accounts are read in one call.
   */
  async getTokenInfo(mint: string): Promise<ChainTokenInfo | undefined> {
    const metadataPda = await metaplexMetadataAddress(mint);
    const { value } = await this.call(() =>
      this.rpc
        .getMultipleAccounts([address(mint), metadataPda], { encoding: 'base64', commitment: 'confirmed' })
        .send(),
    );
    const [account, metaplex] = value;
    if (account == null) return undefined;
    const decoded = decodeMintAccount(base64Bytes(account.data), account.owner);
    if (decoded === undefined) return undefined;
    const metadata =
      decoded.metadata ??
      (metaplex != null && metaplex.owner === METAPLEX_METADATA_PROGRAM
        ? decodeMetaplexMetadata(base64Bytes(metaplex.data))
        : undefined);
    return {
      address: mint,
      decimals: decoded.decimals,
      supply: decoded.supply,
      mintAuthority: decoded.mintAuthority,
      freezeAuthority: decoded.freezeAuthority,
      program: account.owner === TOKEN_2022_PROGRAM ? 'spl-token-2022' : 'spl-token',
      transferRestrictions: decoded.transferRestrictions,
      ...(metadata === undefined ? {} : { name: metadata.name, symbol: metadata.symbol, uri: metadata.uri }),
    };
  }

  /** Token accounts of both token programs, asked in parallel (one round trip of latency). */
  async getTokenAccounts(owner: string): Promise<ChainTokenAccount[]> {
    const byProgram = await Promise.all(
      [TOKEN_PROGRAM, TOKEN_2022_PROGRAM].map(async (program) => {
        const { value } = await this.call(() =>
          this.rpc
            .getTokenAccountsByOwner(
              address(owner),
              { programId: address(program) },
              { encoding: 'jsonParsed', commitment: 'confirmed' },
            )
            .send(),
        );
        return value.flatMap(({ pubkey, account }): ChainTokenAccount[] => {
          // A token account the node cannot parse comes as base64: Agave does so once its mint is closed
          // (Token-2022 MintCloseAuthority, at zero supply), so it holds nothing and has no decimals.
          // Anyone may open such an account for any owner, so it must not fail the owner's portfolio.
          const data: unknown = account.data;
          if (typeof data !== 'object' || data === null || !('parsed' in data)) return [];
          const info = account.data.parsed.info;
          return [
            {
              address: pubkey,
              mint: info.mint,
              decimals: info.tokenAmount.decimals,
              amount: BigInt(info.tokenAmount.amount),
              program: program === TOKEN_2022_PROGRAM ? 'spl-token-2022' : 'spl-token',
            },
          ];
        });
      }),
    );
    return byProgram.flat();
  }

  async close(): Promise<void> {
    this.lifetime.abort();
    this.watcher.close();
  }

  /** Milliseconds per slot: known, or measured from recent performance samples (cached), or the target. */
  private slotMs(): Promise<number> {
    if (this.knownSlotMs !== undefined)
      return Promise.resolve(this.knownSlotMs === 0 ? Number.POSITIVE_INFINITY : this.knownSlotMs);
    const now = Date.now();
    if (this.measuredSlotMs !== undefined && now - this.measuredSlotMs.at < SLOT_TIME_TTL_MS)
      return this.measuredSlotMs.ms;
    const ms = this.rpc
      .getRecentPerformanceSamples(4)
      .send()
      .then((samples) => {
        const slots = samples.reduce((sum, s) => sum + Number(s.numSlots), 0);
        const seconds = samples.reduce((sum, s) => sum + s.samplePeriodSecs, 0);
        return slots > 0 ? (seconds * 1000) / slots : DEFAULT_SLOT_MS;
      })
      .catch(() => DEFAULT_SLOT_MS);
    this.measuredSlotMs = { at: now, ms };
    return ms;
  }

  /** Micro-lamports per compute unit: a percentile of recent non-zero fees on these accounts, or 0. */
  private recentComputeUnitPrice(accounts: Address[]): Promise<bigint> {
    // Recent fees move slowly; one request serves every transfer between the same accounts for a moment.
    const key = [...accounts].sort().join(',');
    const now = Date.now();
    const cached = this.recentFees.get(key);
    if (cached !== undefined && now - cached.at < RECENT_FEE_REUSE_MS) return cached.price;
    if (this.recentFees.size >= RECENT_FEE_CACHE) this.recentFees.clear();
    const price = this.fetchComputeUnitPrice(accounts);
    this.recentFees.set(key, { at: now, price });
    price.catch(() => this.recentFees.delete(key));
    return price;
  }

  private async fetchComputeUnitPrice(accounts: Address[]): Promise<bigint> {
    const recent = await this.call(() => this.rpc.getRecentPrioritizationFees(accounts).send());
    const fees = recent
      .map((f) => BigInt(f.prioritizationFee))
      .filter((f) => f > 0n)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    if (fees.length === 0) return 0n;
    return fees[Math.min(fees.length - 1, Math.floor(fees.length * AUTO_FEE_PERCENTILE))] ?? 0n;
  }

  /** Statuses in order; undefined for signatures not yet confirmed (or unknown). */
  private async statusesOf(signatures: readonly string[]): Promise<(ConfirmationOutcome | undefined)[]> {
    const { value } = await this.rpc
      .getSignatureStatuses(signatures as Signature[], { searchTransactionHistory: true })
      .send();
    return value.map((status) => {
      if (status == null || status.confirmationStatus === 'processed') return undefined;
      if (status.err !== null) {
        return { status: 'failed', slot: status.slot, error: JSON.stringify(status.err, jsonBigint) };
      }
      // A null confirmation status is what nodes report for rooted, i.e. finalized, transactions.
      return {
        status: status.confirmationStatus === 'confirmed' ? 'confirmed' : 'finalized',
        slot: status.slot,
      };
    });
  }

  /** Runs an RPC call, turning what kit throws into a ChainError. */
  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw toChainError(error);
    }
  }
}

function isTransfer(parsed: unknown): parsed is {
  type: 'transfer';
  info: { source: string; destination: string; lamports: number | bigint };
} {
  return typeof parsed === 'object' && parsed !== null && (parsed as { type?: unknown }).type === 'transfer';
}

function isTokenTransfer(parsed: unknown): parsed is {
  type: 'transfer' | 'transferChecked';
  info: { source: string; destination: string; amount?: string; tokenAmount?: { amount: string } };
} {
  if (typeof parsed !== 'object' || parsed === null) return false;
  const type = (parsed as { type?: unknown }).type;
  return type === 'transfer' || type === 'transferChecked';
}

/** What an initialized token account's owner can send: its amount; a frozen or malformed one, nothing. */
function sendableAmount(data: Uint8Array): bigint {
  if (data.length < TOKEN_ACCOUNT_STATE_OFFSET + 1) return 0n;
  if (data[TOKEN_ACCOUNT_STATE_OFFSET] !== TOKEN_ACCOUNT_INITIALIZED) return 0n;
  return new DataView(data.buffer, data.byteOffset, data.byteLength).getBigUint64(
    TOKEN_ACCOUNT_AMOUNT_OFFSET,
    true,
  );
}

function base64Bytes(data: readonly [string, string] | unknown): Uint8Array {
  const text = Array.isArray(data) && typeof data[0] === 'string' ? data[0] : '';
  return new Uint8Array(Buffer.from(text, 'base64'));
}

function jsonBigint(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

/**
 * The same transfer through @solana/kit's message compiler: for what the hand encoding leaves out (one
 * key in two roles), and the reference transaction-transfer.test.ts compares the hand encoding with.
 */
export function compileTransfer(
  from: Address,
  to: Address,
  request: {
    readonly amount: bigint;
    readonly reference?: string | undefined;
    readonly memo?: string | undefined;
  },
  blockhash: { readonly blockhash: Blockhash; readonly lastValidBlockHeight: bigint },
  computeUnitPrice: bigint,
): Uint8Array {
  const transfer = getTransferSolInstruction({
    source: createNoopSigner(from),
    destination: to,
    amount: request.amount,
  });
  const instructions: Instruction[] = [
    getSetComputeUnitLimitInstruction({ units: TRANSFER_COMPUTE_UNIT_LIMIT }),
    ...(computeUnitPrice > 0n
      ? [getSetComputeUnitPriceInstruction({ microLamports: computeUnitPrice })]
      : []),
    request.reference === undefined
      ? transfer
      : {
          ...transfer,
          accounts: [
            ...transfer.accounts,
            { address: address(request.reference), role: AccountRole.READONLY },
          ],
        },
    ...(request.memo === undefined
      ? []
      : [getAddMemoInstruction({ memo: request.memo }, { programAddress: MEMO_PROGRAM })]),
  ];
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(from, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  return new Uint8Array(getTransactionEncoder().encode(compileTransaction(message)));
}
