import { setMaxListeners } from 'node:events';
import {
  type Address,
  bytesToHex,
  createPublicClient,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  hexToBytes,
  isAddress,
  keccak256,
  type PublicClient,
  parseAbi,
  parseTransaction,
  recoverTransactionAddress,
  type StateOverride,
  serializeTransaction,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { estimateMaxPriorityFeePerGas } from 'viem/actions';
import type { NetworkInfo, TokenInfo } from '../../domain/network.ts';
import type {
  AccountNonces,
  ChainAdapter,
  ChainTokenAccount,
  ChainTokenInfo,
  ChainTransaction,
  ConfirmationOutcome,
  FindSignaturesOptions,
  LocalFaucet,
  PreparedTransaction,
  SignatureInfo,
  SignedTransaction,
  TransferRequest,
  TransferToken,
} from '../chain-adapter.ts';
import { ChainError } from '../chain-error.ts';
import { DEFAULT_RPC_DOWN_MS, DEFAULT_RPC_TIMEOUT_MS, RpcEndpoints } from '../rpc-endpoints.ts';
import type { ChainDurability } from './chain-durability.ts';
import { toChainError } from './evm-errors.ts';
import { generateEvmKeypair } from './evm-keypair.ts';
import { finalityConfirmationsOf } from './evm-networks.ts';
import { failoverTransport } from './failover-transport.ts';
import { decodeCalldataNote, encodeTokenTransferCalldata, encodeTransferNote } from './transfer-calldata.ts';

/**
 * Blocks after preparation during which gate402 waits for a transaction to land (the EVM reading of
 * `lastValidBlockHeight`). EVM transactions never expire on their own; this is gate402's deadline,
 * the same count as Solana's blockhash window: ≈5 min on Base (2 s blocks), ≈30 min on Ethereum.
 */
const DEFAULT_EXPIRY_BLOCKS = 150n;
/** How far back `findSignatures` looks, in blocks. */
const DEFAULT_SCAN_BLOCKS = 256;
/** Blocks fetched at once while scanning. */
const SCAN_CONCURRENCY = 8;
/** Reads of a transaction whose block was rewound right after the read, before it is taken as absent. */
const REREADS = 3;
/**
 * maxFeePerGas = 2 × the latest base fee + the tip: the base fee can rise 12.5% per full block, so
 * this stays includable through six full blocks in a row. Only what the block asks is charged.
 */
const BASE_FEE_HEADROOM = 2n;
/**
 * Blocks a transaction may wait unmined before gate402 replaces it (same nonce, higher fees): about
 * 40 s on Base, 4 min on Ethereum. Long enough for a busy block or two, short enough that a payment
 * priced under a rising base fee does not wait for the whole expiry window.
 */
const DEFAULT_REPLACE_AFTER_BLOCKS = 20n;
/**
 * A replacement raises the tip and the fee cap by at least this many percent: geth, reth and anvil
 * refuse a same-nonce replacement that is not at least 10% dearer on both.
 */
const REPLACEMENT_BUMP_PERCENT = 10n;

/**
 * What a sender is taken to hold beyond the amount when a transfer it cannot fund is estimated (see
 * estimateTransferGas): more than all the ether there is, so no node refuses the estimate for funds.
 */
const ESTIMATE_BALANCE_HEADROOM = 2n ** 96n;
/** Ownable's owner(), called raw: its answer is checked by ownerFrom, not by viem's decoder. */
const OWNER_CALL = encodeFunctionData({
  abi: parseAbi(['function owner() view returns (address)']),
  functionName: 'owner',
});
/** An ABI-encoded address: one 32-byte word, the 20-byte address with 12 zero bytes in front. */
const ADDRESS_WORD = /^0x0{24}[0-9a-fA-F]{40}$/;
/**
 * Gas headroom of a token transfer over its estimate, in percent: what a transfer costs depends on the
 * balances it finds (a recipient's first tokens cost a new storage slot), which can change between the
 * estimate and the block. Only the gas used is charged.
 */
const TOKEN_GAS_HEADROOM_PERCENT = 125n;
/** keccak256("Transfer(address,address,uint256)"): the ERC-20 Transfer event. */
const TRANSFER_EVENT = keccak256(new TextEncoder().encode('Transfer(address,address,uint256)'));
/** The largest uint8, the type of ERC-20 decimals(). */
const MAX_ERC20_DECIMALS = 255;

export interface EvmAdapterOptions {
  readonly info: NetworkInfo;
  readonly rpcUrl: string;
  /**
   * Every endpoint of the network with time limits and failover; absent: `rpcUrl` alone, with the
   * default time limits.
   */
  readonly endpoints?: RpcEndpoints | undefined;
  /** The per-call time limit `endpoints` was made with. */
  readonly rpcTimeoutMs?: number | undefined;
  readonly chainId: number;
  readonly faucet?: LocalFaucet | undefined;
  /** Receipt polling interval while waiting for a confirmation. */
  readonly pollIntervalMs?: number;
  readonly expiryBlocks?: bigint;
  readonly scanBlocks?: number;
  /** Blocks unmined before a custodial transfer is replaced with higher fees. */
  readonly replaceAfterBlocks?: bigint;
  /**
   * Confirmations after which a block counts as final on a node without the `finalized` block tag;
   * absent: the network's default (evm-networks.ts, finalityConfirmationsOf).
   */
  readonly finalityConfirmations?: bigint;
  /**
   * The embedded anvil's journal: a transaction is reported mined only once its block is in it, and
   * absent only after it followed the chain past the read, so nothing reported confirmed can be lost
   * by a crash of the chain, and nothing reported gone comes back from it (chain-durability.ts; @gate402/anvil's journal on the embedded anvil).
   */
  readonly durability?: ChainDurability | undefined;
}

/**
 * The ChainAdapter for EVM chains, on viem; works against any Ethereum JSON-RPC endpoint. Native ETH
 * only (ERC-20 payments come with the payment flows). The port's Solana-flavoured names read:
 *
 * - `signature`: the transaction hash (keccak256 of the signed bytes).
 * - `slot`: the block number.
 * - `lastValidBlockHeight`: the block after which gate402 treats a transaction that has not been mined
 *   as expired (prepared block + `expiryBlocks`); see `waitForConfirmation` for what that can prove.
 * - `feePayer`: the sender (EVM has no separate fee payer).
 * - `reference` and `memo`: calldata, see transfer-calldata.ts.
 * - a secret key: the 32-byte secp256k1 private key.
 *
 * Addresses come back EIP-55 checksummed; compare them case-insensitively.
 */
export class EvmAdapter implements ChainAdapter {
  readonly info: NetworkInfo;
  readonly faucet: LocalFaucet | undefined;
  readonly nonces: AccountNonces;
  readonly endpoints: RpcEndpoints;
  private readonly client: PublicClient;
  private readonly chainId: number;
  private readonly pollIntervalMs: number;
  private readonly expiryBlocks: bigint;
  private readonly scanBlocks: number;
  /** The embedded anvil's journal, which every read that reports a landing (or its absence) waits for. */
  readonly durability: ChainDurability | undefined;
  private readonly finalityConfirmations: bigint;
  /** Aborted on close, so no wait outlives the adapter. */
  private readonly lifetime = new AbortController();

  constructor(options: EvmAdapterOptions) {
    this.info = options.info;
    this.faucet = options.faucet;
    this.chainId = options.chainId;
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000;
    this.expiryBlocks = options.expiryBlocks ?? DEFAULT_EXPIRY_BLOCKS;
    this.scanBlocks = options.scanBlocks ?? DEFAULT_SCAN_BLOCKS;
    this.durability = options.durability;
    this.finalityConfirmations = options.finalityConfirmations ?? finalityConfirmationsOf(options.chainId);
    this.nonces = this.nonceOperations(options.replaceAfterBlocks ?? DEFAULT_REPLACE_AFTER_BLOCKS);
    // cacheTime 0: viem would otherwise serve the block number from a 4 s cache.
    const timeoutMs = options.rpcTimeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;
    this.endpoints =
      options.endpoints ??
      new RpcEndpoints({
        network: options.info.id,
        urls: [options.rpcUrl],
        timeoutMs,
        downMs: DEFAULT_RPC_DOWN_MS,
      });
    this.client = createPublicClient({
      transport: failoverTransport(this.endpoints, timeoutMs),
      cacheTime: 0,
    });
    // Every confirmation wait listens on the lifetime while it sleeps, and a burst of sends waits
    // together: past 10 listeners Node would warn of a leak that is none (each wait removes its own).
    setMaxListeners(0, this.lifetime.signal);
  }

  async ping(): Promise<void> {
    await this.call(() => this.client.getBlockNumber());
  }

  /** At the latest block: a transaction counts once mined, as `confirmed` does on Solana. */
  async getBalance(owner: string): Promise<bigint> {
    const address = toAddress(owner, 'address');
    return this.call(() => this.client.getBalance({ address }));
  }

  async getTokenBalance(owner: string, token: string): Promise<bigint> {
    const holder = toAddress(owner, 'owner');
    return this.call(() =>
      this.client.readContract({
        address: toAddress(token, 'token'),
        abi: erc20Abi,
        functionName: 'balanceOf',
        args: [holder],
      }),
    );
  }

  async getBlockHeight(): Promise<bigint> {
    return this.call(() => this.client.getBlockNumber());
  }

  /**
   * The `finalized` block tag; a node that does not know it (an RPC error for the tag alone) is
   * answered from the latest block less `finalityConfirmations`.
   */
  async finalizedSlot(): Promise<bigint> {
    const tagged = await this.client
      .getBlock({ blockTag: 'finalized' })
      .then((b) => b.number)
      .catch(() => null);
    if (tagged !== null) return tagged;
    const latest = await this.getBlockHeight();
    return latest > this.finalityConfirmations ? latest - this.finalityConfirmations : 0n;
  }

  /** The secret is the 32-byte secp256k1 private key; the address is derived from it. */
  async generateKeypair(): Promise<{ address: string; secretKey: Uint8Array }> {
    return generateEvmKeypair();
  }

  /**
   * An unsigned EIP-1559 transaction (type 2, RLP): the bytes a wallet signs.
   *
   * - gas: estimated by the node (21,000 plus calldata for an account without code). Nodes that check
   *   the sender's balance while estimating (geth) refuse a sender who cannot cover `amount` already
   *   here, as insufficient_funds; anvil checks only at broadcast.
   * - `priorityFee` is a total in wei, as on Solana; EVM prices the tip per unit of gas, so
   *   maxPriorityFeePerGas = priorityFee / gasLimit (rounded down). A plain transfer uses exactly its
   *   gas limit, so the tip paid is that rate × gasLimit, reported as `priorityFee`. Absent: the node's
   *   suggestion (eth_maxPriorityFeePerGas).
   * - `fee`: the most the sender can be charged, gasLimit × maxFeePerGas; the actual fee (gas used ×
   *   effective gas price) is lower and is what `getTransaction` reports.
   * - nonce: `request.nonce` when given (custodial wallets: allocated in the database, see
   *   `nonces`), else the sender's pending count on the node, which two transfers prepared before
   *   either is sent share.
   */
  async prepareTransfer(request: TransferRequest): Promise<PreparedTransaction> {
    const from = toAddress(request.from, 'from');
    const recipient = toAddress(request.to, 'to');
    const note = {
      ...(request.reference === undefined ? {} : { reference: request.reference }),
      ...(request.memo === undefined ? {} : { memo: request.memo }),
    };
    // A token transfer is a call of the token contract moving no ether; the note follows its arguments.
    const { token } = request;
    const to = token === undefined ? recipient : toAddress(token.address, 'token');
    const value = token === undefined ? request.amount : 0n;
    const data =
      token === undefined
        ? encodeTransferNote(note)
        : encodeTokenTransferCalldata(recipient, request.amount, note);
    const [nonce, block, gas, suggestedTip] = await Promise.all([
      request.nonce === undefined
        ? this.call(() => this.client.getTransactionCount({ address: from, blockTag: 'pending' }))
        : Promise.resolve(Number(request.nonce)),
      this.call(() => this.client.getBlock({ blockTag: 'latest' })),
      token === undefined
        ? this.estimateTransferGas(from, to, value, data)
        : this.estimateTokenTransferGas(from, token, data as Hex),
      request.priorityFee === undefined
        ? this.call(() => estimateMaxPriorityFeePerGas(this.client))
        : Promise.resolve(undefined),
    ]);
    if (block.baseFeePerGas === null) {
      throw new ChainError('rejected', `${this.info.name} has no EIP-1559 base fee`);
    }
    const maxPriorityFeePerGas = suggestedTip ?? (request.priorityFee ?? 0n) / gas;
    const maxFeePerGas = block.baseFeePerGas * BASE_FEE_HEADROOM + maxPriorityFeePerGas;
    const serialized = serializeTransaction({
      type: 'eip1559',
      chainId: this.chainId,
      nonce,
      to,
      value,
      gas,
      maxFeePerGas,
      maxPriorityFeePerGas,
      ...(data ? { data } : {}),
    });
    return {
      unsigned: hexToBytes(serialized),
      lastValidBlockHeight: block.number + this.expiryBlocks,
      fee: gas * maxFeePerGas,
      priorityFee: gas * maxPriorityFeePerGas,
      feePayer: from,
      nonce: BigInt(nonce),
    };
  }

  /**
   * The gas of a transfer of `value` from `from` to `to`. A node estimates no transfer of more than the
   * sender holds ("insufficient funds"), yet whoever sends is owed the whole shortfall, amount and fees, as
   * on Solana, where preparing never looks at the balance. The gas is then estimated as if `from` held
   * enough (a state override of its balance), or, on a node that takes no override, for a transfer of
   * nothing (a plain transfer costs the same whatever it moves); the send's balance check refuses it,
   * naming what it needs. Only if neither answers does the node's "insufficient funds" stand.
   */
  private async estimateTransferGas(
    from: Address,
    to: Address,
    value: bigint,
    data: Hex | undefined,
  ): Promise<bigint> {
    const estimate = (amount: bigint, stateOverride?: StateOverride) =>
      this.call(() =>
        this.client.estimateGas({
          account: from,
          to,
          value: amount,
          ...(data ? { data } : {}),
          ...(stateOverride === undefined ? {} : { stateOverride }),
        }),
      );
    try {
      return await estimate(value);
    } catch (error) {
      if (!(error instanceof ChainError) || error.kind !== 'insufficient_funds')
        throw recipientRefusal(error, to);
      try {
        return await estimate(value, [{ address: from, balance: value + ESTIMATE_BALANCE_HEADROOM }]);
      } catch (funded) {
        // Funded, the transfer reverts: the recipient refuses it, whatever the balance.
        if (!(funded instanceof ChainError) || funded.kind === 'unavailable' || reverts(funded))
          throw recipientRefusal(funded, to);
      }
      try {
        return await estimate(0n);
      } catch (nothing) {
        if (nothing instanceof ChainError && nothing.kind === 'unavailable') throw nothing;
        throw error;
      }
    }
  }

  /**
   * The gas of an ERC-20 transfer call, with headroom. The estimate runs the call: one the contract
   * refuses (more than the sender holds, a paused token, a blocked address) is `rejected` here, naming
   * the token. A sender without ether for the gas is estimated as if it held some (the send's balance
   * check refuses it, naming what it needs).
   */
  private async estimateTokenTransferGas(from: Address, token: TransferToken, data: Hex): Promise<bigint> {
    const contract = toAddress(token.address, 'token');
    const estimate = (stateOverride?: StateOverride) =>
      this.call(() =>
        this.client.estimateGas({
          account: from,
          to: contract,
          data,
          ...(stateOverride === undefined ? {} : { stateOverride }),
        }),
      );
    let gas: bigint;
    try {
      try {
        gas = await estimate();
      } catch (error) {
        if (!(error instanceof ChainError) || error.kind !== 'insufficient_funds') throw error;
        gas = await estimate([{ address: from, balance: ESTIMATE_BALANCE_HEADROOM }]);
      }
    } catch (error) {
      if (error instanceof ChainError && reverts(error)) {
        throw new ChainError('rejected', `the token contract ${contract} refuses the transfer`, {
          cause: error,
        });
      }
      throw error;
    }
    return (gas * TOKEN_GAS_HEADROOM_PERCENT) / 100n;
  }

  async sign(prepared: PreparedTransaction, secretKey: Uint8Array): Promise<SignedTransaction> {
    if (secretKey.length !== 32) throw new ChainError('invalid_transaction', 'an EVM key has 32 bytes');
    const account = privateKeyToAccount(bytesToHex(secretKey));
    if (account.address.toLowerCase() !== prepared.feePayer.toLowerCase()) {
      throw new ChainError('invalid_transaction', 'the key does not belong to the sender');
    }
    const transaction = parseTransaction(bytesToHex(prepared.unsigned));
    if (transaction.type !== 'eip1559') {
      throw new ChainError('invalid_transaction', 'not an unsigned EIP-1559 transaction');
    }
    const signed = await account.signTransaction(transaction);
    return {
      wire: hexToBytes(signed),
      signature: keccak256(signed),
      lastValidBlockHeight: prepared.lastValidBlockHeight,
    };
  }

  async broadcast(wire: Uint8Array): Promise<string> {
    return this.call(() => this.client.sendRawTransaction({ serializedTransaction: bytesToHex(wire) }));
  }

  /**
   * Polls for the receipt. Mined: `confirmed` (`finalized` once the chain's finalized block reaches it),
   * or `failed` if it reverted. Past `lastValidBlockHeight` with no receipt and not in the node's pool:
   * `expired`. On EVM that is gate402's deadline, not a proof: signed bytes stay valid until their
   * nonce is used, so whoever holds them must spend that nonce (a replacement) to make it final.
   */
  async waitForConfirmation(
    signature: string,
    lastValidBlockHeight: bigint,
    timeoutMs: number,
  ): Promise<ConfirmationOutcome> {
    const hash = toHash(signature);
    const deadline = Date.now() + timeoutMs;
    while (!this.lifetime.signal.aborted) {
      try {
        const outcome = await this.statusOf(hash);
        if (outcome !== undefined) return outcome;
        if ((await this.getBlockHeight()) > lastValidBlockHeight && !(await this.isKnown(hash))) {
          // Look once more: it may have been mined between the two reads.
          return (await this.statusOf(hash)) ?? { status: 'expired' };
        }
      } catch {
        // A failed poll is retried, and the caller's timeout bounds the wait; but once every endpoint is
        // down nothing can be learnt for a while, so the wait ends now, not known (`pending`).
        if (this.endpoints.allDown) break;
      }
      const left = deadline - Date.now();
      if (left <= 0) break;
      await sleep(Math.min(this.pollIntervalMs, left), this.lifetime.signal);
    }
    return { status: 'pending' };
  }

  async getSignatureStatus(signature: string): Promise<ConfirmationOutcome | undefined> {
    return this.call(() => this.statusOf(toHash(signature)));
  }

  /** Block numbers are block heights on EVM. */
  async blockHeightOf(slot: bigint): Promise<bigint> {
    return slot;
  }

  /** A mined transaction with its fee (gas used × effective gas price, plus the L1 fee on OP-stack chains). */
  async getTransaction(signature: string): Promise<ChainTransaction | undefined> {
    const hash = toHash(signature);
    for (let read = 1; ; read++) {
      const [tx, receipt] = await Promise.all([
        this.call(() => this.client.getTransaction({ hash })).catch(notFound),
        this.call(() => this.client.getTransactionReceipt({ hash })).catch(notFound),
      ]);
      if (tx === undefined || receipt === undefined) {
        await this.absent();
        return undefined;
      }
      if (await this.landed(receipt.blockNumber, receipt.blockHash))
        return this.transactionOf(hash, tx, receipt);
      // Its block was rewound after the read: read again.
      if (read >= REREADS) return undefined;
    }
  }

  private async transactionOf(
    hash: Hex,
    tx: Awaited<ReturnType<PublicClient['getTransaction']>>,
    receipt: Awaited<ReturnType<PublicClient['getTransactionReceipt']>>,
  ): Promise<ChainTransaction> {
    const block = await this.call(() => this.client.getBlock({ blockNumber: receipt.blockNumber }));
    const from = getAddress(tx.from);
    const to = tx.to === null ? null : getAddress(tx.to);
    const note = to === null ? {} : decodeCalldataNote(tx.input);
    // OP-stack receipts carry the L1 data fee the sender also pays; viem keeps the field as the node sent it.
    const l1Fee = (receipt as { l1Fee?: bigint | Hex | null }).l1Fee;
    return {
      signature: hash,
      slot: receipt.blockNumber,
      blockTime: Number(block.timestamp) * 1000,
      fee: receipt.gasUsed * receipt.effectiveGasPrice + (l1Fee == null ? 0n : BigInt(l1Fee)),
      error: receipt.status === 'success' ? null : 'reverted',
      feePayer: from,
      nativeTransfers: to !== null && tx.value > 0n ? [{ from, to, amount: tx.value }] : [],
      tokenTransfers:
        receipt.status !== 'success'
          ? []
          : receipt.logs.flatMap((log) => {
              // Transfer(address indexed from, address indexed to, uint256 value): three topics, one word.
              const [topic, sender, recipient] = log.topics;
              if (topic !== TRANSFER_EVENT || sender === undefined || recipient === undefined) return [];
              if (log.topics.length !== 3 || !/^0x[0-9a-fA-F]{64}$/.test(log.data)) return [];
              return [
                {
                  token: getAddress(log.address),
                  from: getAddress(`0x${sender.slice(26)}`),
                  to: getAddress(`0x${recipient.slice(26)}`),
                  amount: BigInt(log.data),
                },
              ];
            }),
      memos: note.memo === undefined ? [] : [note.memo],
      accounts: [
        from,
        ...(to === null ? [] : [to]),
        ...(note.reference === undefined ? [] : [note.reference]),
      ],
    };
  }

  /**
   * Transactions that name `address` as sender, recipient or anywhere in their calldata (a gate402
   * reference), newest first. EVM nodes have no index for this, so the last `scanBlocks` blocks are
   * read whole: bounded work, and a reference is found while its payment is recent. With `preparedFor`,
   * only the blocks since the transaction was prepared: a pending local-mode payment costs a block or
   * two per look rather than `scanBlocks`.
   */
  async findSignatures(address: string, options: FindSignaturesOptions = {}): Promise<SignatureInfo[]> {
    const needle = toAddress(address, 'address').slice(2).toLowerCase();
    const limit = options.limit ?? 100;
    const latest = await this.getBlockHeight();
    // A transaction prepared at block N (lastValidBlockHeight - expiryBlocks) is mined after N at the earliest.
    const preparedAt = options.preparedFor == null ? 0n : options.preparedFor - this.expiryBlocks;
    const oldest = max(max(latest - BigInt(this.scanBlocks) + 1n, preparedAt), 0n);
    const found: { hash: Hex; block: bigint }[] = [];
    for (let top = latest; top >= oldest && found.length < limit; top -= BigInt(SCAN_CONCURRENCY)) {
      const numbers: bigint[] = [];
      for (let n = top; n > top - BigInt(SCAN_CONCURRENCY) && n >= oldest; n--) numbers.push(n);
      const blocks = await Promise.all(
        numbers.map((blockNumber) =>
          this.call(() => this.client.getBlock({ blockNumber, includeTransactions: true })),
        ),
      );
      for (const block of blocks) {
        for (const tx of [...block.transactions].reverse()) {
          if (mentions(tx, needle)) found.push({ hash: tx.hash, block: block.number });
        }
      }
    }
    const newest = found.slice(0, limit);
    const receipts = await Promise.all(
      newest.map((f) => this.call(() => this.client.getTransactionReceipt({ hash: f.hash }))),
    );
    if (newest.length === 0) await this.absent();
    // Each block found in the journal first; one rewound since the scan is left out.
    const blocks = new Map<bigint, Promise<boolean>>();
    for (const receipt of receipts) {
      if (!blocks.has(receipt.blockNumber))
        blocks.set(receipt.blockNumber, this.landed(receipt.blockNumber, receipt.blockHash));
    }
    const durable = await Promise.all(receipts.map((receipt) => blocks.get(receipt.blockNumber)));
    return newest.flatMap((f, i) =>
      durable[i] === true && receipts[i]?.blockNumber === f.block
        ? [{ signature: f.hash, slot: f.block, error: receipts[i]?.status === 'success' ? null : 'reverted' }]
        : [],
    );
  }

  /** An ERC-20 contract: decimals and totalSupply must answer; undefined for anything else. */
  async getTokenInfo(address: string): Promise<ChainTokenInfo | undefined> {
    const contract = toAddress(address, 'address');
    const code = await this.call(() => this.client.getCode({ address: contract }));
    if (code === undefined || code === '0x') return undefined;
    // A call the contract refuses (reverts, answers nothing or garbage) leaves that field unknown; one the
    // endpoint failed is no answer at all, and must not make a token look like no token.
    const read = <T>(work: () => Promise<T>) =>
      work().catch((error: unknown) => {
        const failure = toChainError(error);
        if (failure.kind === 'unavailable') throw failure;
        return undefined;
      });
    const [decimals, supply, name, symbol, owner] = await Promise.all([
      read(() => this.client.readContract({ address: contract, abi: erc20Abi, functionName: 'decimals' })),
      read(() => this.client.readContract({ address: contract, abi: erc20Abi, functionName: 'totalSupply' })),
      read(() => this.client.readContract({ address: contract, abi: erc20Abi, functionName: 'name' })),
      read(() => this.client.readContract({ address: contract, abi: erc20Abi, functionName: 'symbol' })),
      read(() => this.client.call({ to: contract, data: OWNER_CALL })),
    ]);
    // The decoder does not check that decimals fits its uint8, so a contract answering more is no
    // ERC-20 (and 2^20 decimals took minutes to print its supply, 2^29 more than a string holds).
    if (decimals === undefined || supply === undefined || decimals > MAX_ERC20_DECIMALS) return undefined;
    return {
      address: getAddress(contract),
      decimals,
      supply,
      ...(name === undefined ? {} : { name }),
      ...(symbol === undefined ? {} : { symbol }),
      mintAuthority: ownerFrom(owner?.data),
      freezeAuthority: null,
      program: 'erc20',
      transferRestrictions: [],
    };
  }

  /**
   * Balances of the `known` ERC-20 tokens (default the network's own; an EVM address has no list of its
   * tokens), held ones only.
   */
  async getTokenAccounts(
    owner: string,
    known: readonly TokenInfo[] = this.info.tokens,
  ): Promise<ChainTokenAccount[]> {
    const holder = toAddress(owner, 'owner');
    const balances = await Promise.all(
      known.map((token) =>
        this.call(() =>
          this.client.readContract({
            address: getAddress(token.address),
            abi: erc20Abi,
            functionName: 'balanceOf',
            args: [holder],
          }),
        ),
      ),
    );
    return known.flatMap((token, i) => {
      const amount = balances[i] ?? 0n;
      return amount === 0n
        ? []
        : [
            {
              address: getAddress(token.address),
              mint: getAddress(token.address),
              decimals: token.decimals,
              amount,
              program: 'erc20',
            },
          ];
    });
  }

  async close(): Promise<void> {
    this.lifetime.abort();
  }

  /** What `nonces` offers, bound to this network's replacement policy. */
  private nonceOperations(replaceAfterBlocks: bigint): AccountNonces {
    return {
      minedCount: async (owner) => {
        const address = toAddress(owner, 'address');
        return BigInt(
          await this.call(() => this.client.getTransactionCount({ address, blockTag: 'latest' })),
        );
      },
      hasWaiting: async (owner) => {
        const address = toAddress(owner, 'address');
        const [mined, pending] = await Promise.all([
          this.call(() => this.client.getTransactionCount({ address, blockTag: 'latest' })),
          this.call(() => this.client.getTransactionCount({ address, blockTag: 'pending' })),
        ]);
        return pending > mined;
      },
      withNonce: (prepared, nonce) => {
        const transaction = parseTransaction(bytesToHex(prepared.unsigned));
        if (transaction.type !== 'eip1559') {
          throw new ChainError('invalid_transaction', 'not an unsigned EIP-1559 transaction');
        }
        const unsigned = hexToBytes(
          serializeTransaction({ ...transaction, chainId: this.chainId, nonce: Number(nonce) }),
        );
        return { ...prepared, unsigned, nonce };
      },
      // Counted from the block the transaction was prepared at (lastValidBlockHeight - expiryBlocks).
      replacementDue: (lastValidBlockHeight, height) =>
        height >= lastValidBlockHeight - this.expiryBlocks + replaceAfterBlocks,
      stranded: (owner, nonce, signature) => this.stranded(owner, nonce, signature),
      prepareReplacement: (previous) => this.prepareReplacement(previous),
      signedBy: async (wire) => {
        const serialized = bytesToHex(wire);
        const transaction = parseTransaction(serialized);
        if (transaction.nonce === undefined || transaction.r === undefined) {
          throw new ChainError('invalid_transaction', 'not a signed transaction');
        }
        const sender = await recoverTransactionAddress({
          serializedTransaction: serialized as Parameters<
            typeof recoverTransactionAddress
          >[0]['serializedTransaction'],
        });
        return { sender: getAddress(sender), nonce: BigInt(transaction.nonce) };
      },
    };
  }

  /**
   * See AccountNonces.stranded. The node's pending count includes every transaction it would put in
   * its next block, so a healthy node holding a mineable transaction with the next nonce counts it;
   * one priced under the base fee or costing more than the sender holds is not counted either, and is
   * left to the replacement policy. The reads run at once: if the transaction is mined meanwhile, either
   * its block number or the mined count shows it, and if it is about to be, the pending count does.
   */
  private async stranded(owner: string, nonce: bigint, signature: string): Promise<boolean> {
    const address = toAddress(owner, 'address');
    const hash = toHash(signature);
    const [held, mined, pending, block, balance] = await Promise.all([
      this.call(() => this.client.getTransaction({ hash })).catch(notFound),
      this.call(() => this.client.getTransactionCount({ address, blockTag: 'latest' })),
      this.call(() => this.client.getTransactionCount({ address, blockTag: 'pending' })),
      this.call(() => this.client.getBlock({ blockTag: 'latest' })),
      this.call(() => this.client.getBalance({ address })),
    ]);
    if (held === undefined || held.blockNumber !== null || BigInt(held.nonce) !== nonce) return false;
    if (BigInt(mined) !== nonce || pending !== mined) return false;
    const feeCap = held.maxFeePerGas ?? held.gasPrice ?? 0n;
    const payable = block.baseFeePerGas !== null && feeCap >= block.baseFeePerGas;
    return payable && balance >= held.value + held.gas * feeCap;
  }

  /**
   * Same nonce, recipient, value, gas limit and calldata as `previous`; only the fees change: each at
   * least REPLACEMENT_BUMP_PERCENT above the old one (what nodes require to accept a replacement), and
   * at least what a fresh transfer would offer now (so it is includable when the base fee has risen).
   */
  private async prepareReplacement(previous: Uint8Array): Promise<PreparedTransaction> {
    const serialized = bytesToHex(previous);
    const old = parseTransaction(serialized);
    if (old.type !== 'eip1559' || old.to == null || old.nonce === undefined || old.gas === undefined) {
      throw new ChainError('invalid_transaction', 'not a signed EIP-1559 transfer');
    }
    const from = await recoverTransactionAddress({
      serializedTransaction: serialized as Parameters<
        typeof recoverTransactionAddress
      >[0]['serializedTransaction'],
    });
    const [block, suggestedTip] = await Promise.all([
      this.call(() => this.client.getBlock({ blockTag: 'latest' })),
      this.call(() => estimateMaxPriorityFeePerGas(this.client)),
    ]);
    if (block.baseFeePerGas === null) {
      throw new ChainError('rejected', `${this.info.name} has no EIP-1559 base fee`);
    }
    const oldTip = old.maxPriorityFeePerGas ?? 0n;
    const oldCap = old.maxFeePerGas ?? 0n;
    const maxPriorityFeePerGas = max(bumped(oldTip), suggestedTip);
    const maxFeePerGas = max(bumped(oldCap), block.baseFeePerGas * BASE_FEE_HEADROOM + maxPriorityFeePerGas);
    const unsigned = serializeTransaction({
      type: 'eip1559',
      chainId: this.chainId,
      nonce: old.nonce,
      to: old.to,
      value: old.value ?? 0n,
      gas: old.gas,
      maxFeePerGas,
      maxPriorityFeePerGas,
      ...(old.data === undefined || old.data === '0x' ? {} : { data: old.data }),
    });
    return {
      unsigned: hexToBytes(unsigned),
      lastValidBlockHeight: block.number + this.expiryBlocks,
      fee: old.gas * maxFeePerGas,
      priorityFee: old.gas * maxPriorityFeePerGas,
      feePayer: getAddress(from),
      nonce: BigInt(old.nonce),
    };
  }

  /**
   * Whether the block a read named is durable (in the embedded anvil's journal; always, elsewhere);
   * false when it was rewound after the read.
   */
  private landed(block: bigint, hash: Hex): Promise<boolean> {
    const durability = this.durability;
    return durability === undefined
      ? Promise.resolve(true)
      : this.call(() => durability.syncThrough(block, hash));
  }

  /** Before a transaction is reported absent: the journal has followed any rewind the read saw. */
  private async absent(): Promise<void> {
    const durability = this.durability;
    if (durability !== undefined) await this.call(() => durability.sync());
  }

  private async statusOf(hash: Hex): Promise<ConfirmationOutcome | undefined> {
    let receipt: Awaited<ReturnType<PublicClient['getTransactionReceipt']>> | undefined;
    for (let read = 1; ; read++) {
      receipt = await this.client.getTransactionReceipt({ hash }).catch(notFound);
      if (receipt === undefined) {
        await this.absent();
        return undefined;
      }
      if (await this.landed(receipt.blockNumber, receipt.blockHash)) break;
      // Its block was rewound after the read: read again.
      if (read >= REREADS) return undefined;
    }
    if (receipt.status !== 'success')
      return { status: 'failed', slot: receipt.blockNumber, error: 'reverted' };
    const finalized = await this.finalizedSlot().catch(() => null);
    if (finalized === null || finalized < receipt.blockNumber)
      return { status: 'confirmed', slot: receipt.blockNumber };
    // Finalized only if the receipt's block is the canonical one at its height: with several endpoints
    // the receipt and the finalized tag may come from different nodes, one of them on a dropped fork.
    const canonical = await this.call(() => this.client.getBlock({ blockNumber: receipt.blockNumber }))
      .then((b) => b.hash)
      .catch(() => null);
    return { status: canonical === receipt.blockHash ? 'finalized' : 'confirmed', slot: receipt.blockNumber };
  }

  /** Whether the node has the transaction at all (mined or waiting in its pool). */
  private async isKnown(hash: Hex): Promise<boolean> {
    return (await this.client.getTransaction({ hash }).catch(notFound)) !== undefined;
  }

  /** Runs an RPC call, turning what viem throws into a ChainError. */
  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw toChainError(error);
    }
  }
}

/**
 * The owner() a contract answered, or null when the answer is not one ABI-encoded address: viem's decoder
 * takes the last 20 bytes of the first word whatever the other 12 hold, and ignores what follows it, so a
 * contract answering garbage (or anything but owner()) was shown with an owner it never named.
 */
function ownerFrom(data: Hex | undefined): string | null {
  return data !== undefined && ADDRESS_WORD.test(data) ? getAddress(`0x${data.slice(26)}`) : null;
}

/** A transfer that reverts when estimated. */
function reverts(error: ChainError): boolean {
  return error.kind === 'rejected' && /execution reverted/i.test(error.message);
}

/** A plain value transfer reverts only in the recipient's code: a contract that takes no ETH. */
function recipientRefusal(error: unknown, to: Address): unknown {
  return error instanceof ChainError && reverts(error)
    ? new ChainError('recipient_refused', `${to} reverts when paid`, { cause: error })
    : error;
}

/** A fee raised by the replacement bump, rounded up, and by at least 1 wei (10% of 0 is 0). */
function bumped(fee: bigint): bigint {
  const raise = (fee * REPLACEMENT_BUMP_PERCENT + 99n) / 100n;
  return fee + (raise > 0n ? raise : 1n);
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function mentions(tx: { from: Address; to: Address | null; input: Hex }, needle: string): boolean {
  if (tx.from.slice(2).toLowerCase() === needle || tx.to?.slice(2).toLowerCase() === needle) return true;
  const input = tx.input.toLowerCase();
  // Only at byte boundaries: an offset inside a byte would match unrelated data.
  for (let at = input.indexOf(needle, 2); at !== -1; at = input.indexOf(needle, at + 1)) {
    if (at % 2 === 0) return true;
  }
  return false;
}

/** viem's not-found errors mean "none"; anything else is a real failure. */
function notFound(error: unknown): undefined {
  const cause = error instanceof ChainError ? error.cause : error;
  if (cause instanceof TransactionNotFoundError || cause instanceof TransactionReceiptNotFoundError) {
    return undefined;
  }
  throw error;
}

function toAddress(value: string, field: string): Address {
  if (!isAddress(value, { strict: false })) {
    throw new ChainError('invalid_transaction', `${field} is not an EVM address`);
  }
  return getAddress(value);
}

function toHash(value: string): Hex {
  if (!/^0x[0-9a-fA-F]{64}$/.test(value)) {
    throw new ChainError('invalid_transaction', 'an EVM transaction hash is 0x and 32 bytes of hex');
  }
  return value.toLowerCase() as Hex;
}

/**
 * Waits `ms`, or less when `signal` aborts. The abort listener goes when the wait ends either way: the
 * signal is the adapter's lifetime, and a confirmation wait polls many times over it.
 */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
