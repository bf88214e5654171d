import type { SchemeNetworkClient } from '@x402/core/types';
import type { ClientEvmSigner } from '@x402/evm';
import {
  type Address,
  BaseError,
  bytesToHex,
  ContractFunctionZeroDataError,
  createPublicClient,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  hexToBytes,
  maxUint256,
  parseAbi,
  parseAbiItem,
  serializeTransaction,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import type { ChainAdapter, PreparedTransaction } from '../chain-adapter.ts';
import { ChainError } from '../chain-error.ts';
import type { ExactPaymentRequest, SignedExactPayment } from '../exact-payer.ts';
import { stockPayload } from '../stock-payload.ts';
import type { UptoPayer, UptoSettlementFound } from '../upto-payer.ts';
import { failoverTransport } from './failover-transport.ts';
import { firstBlockSince } from './first-block-since.ts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from './permit2-addresses.ts';
import { isPermit2Payload, permit2AuthorizationOf } from './permit2-payment.ts';
import { uptoPermitOf } from './upto-evm-scheme.ts';
import { UPTO_PERMIT2_PROXY_ADDRESS, uptoSettleCallOf } from './upto-permit2-proxy.ts';

/** The base fee may double before the approval is mined (as the adapter prices its own transfers). */
const BASE_FEE_HEADROOM = 2n;
/** Blocks an approval may wait unmined before the reconciler treats it as a stuck send (as transfers). */
const EXPIRY_BLOCKS = 150n;
const TRANSFER_EVENT = parseAbiItem(
  'event Transfer(address indexed from, address indexed to, uint256 value)',
);
const NONCE_BITMAP_ABI = parseAbi([
  'function nonceBitmap(address owner, uint256 wordPosition) view returns (uint256)',
]);

/**
 * What a Permit2 permit signed by a custodial wallet lets move, whichever x402 proxy it names: `upto`
 * (spender: the upto proxy; it moves at most `amount`, as the seller settles) or `exact` through Permit2
 * (spender: the exact proxy, which always moves exactly `amount`). Permit2 spends the permit's nonce only
 * in the call that transfers the tokens to `to`; the permit is unusable after `deadline` (Unix s).
 */
interface SignedPermit {
  readonly from: Address;
  readonly token: Address;
  readonly to: Address;
  readonly amount: bigint;
  readonly nonce: bigint;
  readonly deadline: bigint;
  readonly exact: boolean;
}

/** The permit of an upto payload or of an exact payload through Permit2; undefined for anything else. */
function signedPermitOf(payload: Readonly<Record<string, unknown>>): SignedPermit | undefined {
  const upto = uptoPermitOf(payload);
  if (upto !== undefined && upto.spender === UPTO_PERMIT2_PROXY_ADDRESS) {
    const { from, token, to, amount, nonce, deadline } = upto;
    return { from, token, to, amount, nonce, deadline, exact: false };
  }
  const exact = isPermit2Payload(payload) ? permit2AuthorizationOf(payload) : undefined;
  if (exact !== undefined && exact.spender === EXACT_PERMIT2_PROXY_ADDRESS) {
    const { from, token, to, amount, nonce, deadline } = exact;
    return { from, token, to, amount, nonce, deadline, exact: true };
  }
  return undefined;
}

/**
 * x402 `upto` on EVM, buyer side (see UptoPayer): the stock `@x402/evm/upto/client` signs a Permit2
 * permit-witness for the seller's maximum through x402's upto proxy, naming the facilitator the seller's
 * requirement names (typed data only). Permit2 moves the tokens, so the wallet must have approved Permit2
 * for the token: `prepareApproval` builds that `approve(Permit2, max)` call, the one transaction the
 * custodial buyer sends for it. Permit2 still moves nothing without a permit signed by the wallet key.
 */
export function uptoEvmPayer(chain: ChainAdapter): UptoPayer {
  const client = createPublicClient({
    transport: failoverTransport(chain.endpoints, chain.endpoints.timeoutMs),
    cacheTime: 0,
  });
  const chainId = Number(chain.info.id.slice('eip155:'.length));
  return {
    family: 'evm',
    refusal(requirement) {
      const extra = requirement.extra as Record<string, unknown> | undefined;
      if (extra?.assetTransferMethod !== undefined && extra.assetTransferMethod !== 'permit2') {
        return `extra.assetTransferMethod ${String(extra.assetTransferMethod).slice(0, 40)} is not upto's (permit2)`;
      }
      if (
        typeof extra?.facilitatorAddress !== 'string' ||
        !/^0x[0-9a-fA-F]{40}$/.test(extra.facilitatorAddress)
      ) {
        return 'extra.facilitatorAddress must name the facilitator allowed to settle (x402 upto on EVM)';
      }
      return undefined;
    },
    async sign(input: ExactPaymentRequest, secretKey: Uint8Array): Promise<SignedExactPayment> {
      const account = privateKeyToAccount(bytesToHex(secretKey));
      const signer: ClientEvmSigner = {
        address: account.address,
        signTypedData: (message) =>
          account.signTypedData(message as Parameters<typeof account.signTypedData>[0]),
      };
      // Loaded when first used, as the exact payer's.
      const scheme: SchemeNetworkClient = new (await import('@x402/evm/upto/client')).UptoEvmScheme(signer);
      const paymentPayload = await stockPayload(scheme, input);
      const payload = paymentPayload.payload as Record<string, unknown>;
      const permit = uptoPermitOf(payload);
      if (permit === undefined)
        throw new Error('the stock EVM upto client made a payload that is no upto permit');
      return {
        paymentPayload,
        payload,
        payer: account.address,
        lastValidBlockHeight: null,
        validUntil: Number(permit.deadline) * 1000,
      };
    },
    signedMaximum(payload) {
      return uptoPermitOf(payload)?.amount;
    },
    async allowance(wallet, token) {
      try {
        return await client.readContract({
          address: getAddress(token),
          abi: erc20Abi,
          functionName: 'allowance',
          args: [getAddress(wallet), PERMIT2_ADDRESS],
        });
      } catch (error) {
        throw new ChainError('unavailable', `could not read the Permit2 allowance: ${String(error)}`);
      }
    },
    async prepareApproval(wallet, token): Promise<PreparedTransaction> {
      const from = getAddress(wallet);
      const to = getAddress(token);
      const data = encodeFunctionData({
        abi: erc20Abi,
        functionName: 'approve',
        args: [PERMIT2_ADDRESS, maxUint256],
      });
      let gas: bigint;
      let block: Awaited<ReturnType<typeof client.getBlock>>;
      let tip: bigint;
      let pending: number;
      try {
        [gas, block, tip, pending] = await Promise.all([
          client.estimateGas({ account: from, to, data }),
          client.getBlock({ blockTag: 'latest' }),
          client.estimateMaxPriorityFeePerGas(),
          client.getTransactionCount({ address: from, blockTag: 'pending' }),
        ]);
      } catch (error) {
        throw new ChainError('unavailable', `could not price the Permit2 approval: ${String(error)}`);
      }
      if (block.baseFeePerGas === null) {
        throw new ChainError('rejected', `${chain.info.name} has no EIP-1559 base fee`);
      }
      const maxFeePerGas = block.baseFeePerGas * BASE_FEE_HEADROOM + tip;
      const unsigned = serializeTransaction({
        type: 'eip1559',
        chainId,
        nonce: pending,
        to,
        value: 0n,
        gas,
        maxFeePerGas,
        maxPriorityFeePerGas: tip,
        data,
      });
      return {
        unsigned: hexToBytes(unsigned),
        lastValidBlockHeight: (block.number ?? 0n) + EXPIRY_BLOCKS,
        fee: gas * maxFeePerGas,
        priorityFee: gas * tip,
        feePayer: from,
        // The node's pending count: the floor of the nonce the caller allocates.
        nonce: BigInt(pending),
      };
    },
    async findSettlement(payload, since) {
      const permit = uptoPermitOf(payload);
      if (permit === undefined) return undefined;
      // Permit2 emits nothing naming the nonce it spends: the settlement is found by the token's
      // Transfer (owner → payee) and recognised by its calldata, a settle of x402's upto proxy for this
      // owner, token, nonce and payee, moving at most the signed maximum.
      const fromBlock = await firstBlockSince(client, BigInt(Math.floor(since / 1000)));
      const logs = await client.getLogs({
        address: permit.token,
        event: TRANSFER_EVENT,
        args: { from: permit.from, to: permit.to },
        fromBlock,
        toBlock: 'latest',
      });
      const looked = new Set<string>();
      for (const log of logs) {
        const hash = log.transactionHash;
        if (hash == null || looked.has(hash)) continue;
        looked.add(hash);
        const carrier = await client.getTransaction({ hash });
        const call = uptoSettleCallOf(carrier.to, carrier.input);
        if (
          call === undefined ||
          call.owner !== permit.from ||
          call.token !== permit.token ||
          call.nonce !== permit.nonce ||
          call.to !== permit.to ||
          call.amount > permit.amount ||
          log.args.value !== call.amount
        ) {
          continue;
        }
        const receipt = await client.getTransactionReceipt({ hash });
        if (receipt.status !== 'success') continue;
        return { transactionId: hash, slot: receipt.blockNumber, amount: call.amount };
      }
      // The facilitator is whatever address the seller named, a contract of its own included, which may
      // call the proxy internally: no calldata shows it. The nonce is then the proof (Permit2 spends it
      // only with a transfer), and the transfer is the one in the block where the nonce was spent.
      return settlementOfSpentNonce({ ...permit, exact: false }, logs);
    },
    async findBySpentNonce(payload, since) {
      const permit = signedPermitOf(payload);
      if (permit === undefined) return undefined;
      const fromBlock = await firstBlockSince(client, BigInt(Math.floor(since / 1000)));
      const logs = await client.getLogs({
        address: permit.token,
        event: TRANSFER_EVENT,
        args: { from: permit.from, to: permit.to },
        fromBlock,
        toBlock: 'latest',
      });
      return settlementOfSpentNonce(permit, logs);
    },
    async nonceSpent(payload, block) {
      const permit = signedPermitOf(payload);
      return permit !== undefined && (await nonceSpentAt(permit.from, permit.nonce, block ?? 'latest'));
    },
    async permitEnded(payload, finalizedSlot) {
      const permit = signedPermitOf(payload);
      if (permit === undefined) return undefined;
      // Permit2 refuses the permit in any block stamped after its deadline, and timestamps never go back
      // along a chain: once the finalized block is stamped past the deadline, every block that could use
      // the permit is at or before it, and none can be reorganised away. The nonce is read at that very
      // block, never at whatever head a node answers with (a lagging node's head says "unspent" for a
      // permit the chain can still take).
      let finalized: Awaited<ReturnType<typeof client.getBlock>>;
      try {
        finalized = await client.getBlock({ blockNumber: finalizedSlot });
      } catch (error) {
        throw new ChainError('unavailable', `could not read the finalized block: ${String(error)}`);
      }
      if (finalized.timestamp <= permit.deadline) return undefined;
      return (await nonceSpentFrom(permit, finalizedSlot)) ? 'used' : 'unused';
    },
    async nonceSpentBlock(payload, since) {
      const permit = signedPermitOf(payload);
      if (permit === undefined) return undefined;
      // The first block showing the nonce spent, by a binary search on historical reads (about log2 of
      // the blocks since signing). A node keeping no state that old cannot say: undefined.
      try {
        let low = await firstBlockSince(client, BigInt(Math.floor(since / 1000)));
        let high = await client.getBlockNumber();
        const spent = (block: bigint) => nonceBitAt(permit.from, permit.nonce, block, 'unspent');
        if (!(await spent(high))) return undefined;
        if (await spent(low)) return undefined;
        while (low + 1n < high) {
          const middle = (low + high) / 2n;
          if (await spent(middle)) high = middle;
          else low = middle;
        }
        return high;
      } catch {
        return undefined;
      }
    },
  };

  /**
   * The settlement of a permit whose nonce is spent though no transaction calling the proxy with it was
   * recognised: the Transfer (owner → payee; exact: of the signed amount, which is all the exact proxy
   * ever moves; upto: at most the maximum) of the block where the nonce went from unspent to spent.
   * undefined while the nonce is unspent, or when no such transfer is seen at all (the caller decides
   * what that payment becomes once its permit can no longer be used: see X402PayService.watch).
   */
  async function settlementOfSpentNonce(
    permit: SignedPermit,
    logs: readonly {
      transactionHash: Hex | null;
      blockNumber: bigint | null;
      args: { value?: bigint | undefined };
    }[],
  ): Promise<UptoSettlementFound | undefined> {
    if (!(await nonceSpentAt(permit.from, permit.nonce, 'latest'))) return undefined;
    return spentNonceSettlement(
      permit,
      logs.filter((log) => {
        const value = log.args.value ?? 0n;
        return (
          log.transactionHash != null && (permit.exact ? value === permit.amount : value <= permit.amount)
        );
      }),
    );
  }

  /**
   * Whether the permit's nonce is spent at `block`, or, from a node keeping no state that old (a pruned
   * node asked for the finalized block of a chain whose finality trails by hundreds of blocks), at its
   * latest block, provided that one is at or past `block`. A Permit2 nonce bit is only ever set, so
   * unspent there means unspent at `block`; spent there is taken as spent (never less than may have been
   * paid). A node whose head is behind `block` cannot say: unavailable.
   */
  async function nonceSpentFrom(permit: SignedPermit, block: bigint): Promise<boolean> {
    try {
      return await nonceBitAt(permit.from, permit.nonce, block, 'unspent');
    } catch {
      let head: bigint;
      try {
        head = await client.getBlockNumber();
      } catch (error) {
        throw new ChainError('unavailable', `could not read the latest block: ${String(error)}`);
      }
      if (head < block) {
        throw new ChainError(
          'unavailable',
          `the node's latest block ${head} is behind the finalized ${block}`,
        );
      }
      try {
        return await nonceBitAt(permit.from, permit.nonce, head, 'unspent');
      } catch (error) {
        throw new ChainError('unavailable', `could not read the Permit2 nonce bitmap: ${String(error)}`);
      }
    }
  }

  /** Whether Permit2 holds `nonce` of `owner` spent at `block` (its unordered-nonce bitmap). */
  async function nonceSpentAt(owner: Address, nonce: bigint, block: bigint | 'latest'): Promise<boolean> {
    try {
      return await nonceBitAt(owner, nonce, block, 'throw');
    } catch (error) {
      throw new ChainError('unavailable', `could not read the Permit2 nonce bitmap: ${String(error)}`);
    }
  }

  /**
   * The nonce's bit at `block`. `noCode`: what a block before Permit2 existed answers ('unspent': a
   * nonce no contract held was spent by nobody); any other failure (a node without that state) throws.
   */
  async function nonceBitAt(
    owner: Address,
    nonce: bigint,
    block: bigint | 'latest',
    noCode: 'unspent' | 'throw',
  ): Promise<boolean> {
    try {
      const word = await client.readContract({
        address: PERMIT2_ADDRESS,
        abi: NONCE_BITMAP_ABI,
        functionName: 'nonceBitmap',
        args: [owner, nonce >> 8n],
        ...(block === 'latest' ? {} : { blockNumber: block }),
      });
      return ((word >> (nonce & 0xffn)) & 1n) === 1n;
    } catch (error) {
      const empty =
        error instanceof BaseError && error.walk((e) => e instanceof ContractFunctionZeroDataError) !== null;
      if (empty && noCode === 'unspent') return false;
      throw error;
    }
  }

  /**
   * The settlement of a permit whose nonce is spent though no transaction calling the proxy carries it:
   * the one Transfer (owner → payee, at most the maximum) in the block where the nonce went from unspent
   * to spent (historical reads). When that does not single out one transfer (several in that block, or
   * the node keeps no state that old), the SIGNED MAXIMUM is recorded with the likeliest transaction:
   * never less than was taken, so the spend caps stay safe (exact: the amount, all it can move).
   * undefined when no such transfer was seen.
   */
  async function spentNonceSettlement(
    permit: SignedPermit,
    candidates: readonly {
      transactionHash: Hex | null;
      blockNumber: bigint | null;
      args: { value?: bigint | undefined };
    }[],
  ): Promise<UptoSettlementFound | undefined> {
    const blocks = [...new Set(candidates.map((log) => log.blockNumber).filter((b) => b !== null))];
    // Whether every block was judged from historical state: then a nonce spent in none of them was
    // spent by a call that moved nothing seen here, and no other permit's transfer is taken for it.
    let judgedAll = true;
    for (const block of blocks) {
      const flipped = await Promise.all([
        nonceSpentAt(permit.from, permit.nonce, block - 1n),
        nonceSpentAt(permit.from, permit.nonce, block),
      ]).then(
        ([before, after]) => !before && after,
        () => {
          judgedAll = false;
          return false;
        },
      );
      if (!flipped) continue;
      const inBlock = candidates.filter((log) => log.blockNumber === block);
      const only = inBlock.length === 1 ? inBlock[0] : undefined;
      return {
        transactionId: (inBlock[0]?.transactionHash ?? '') as string,
        slot: block,
        amount: only?.args.value ?? permit.amount,
      };
    }
    if (judgedAll) return undefined;
    const last = candidates.at(-1);
    if (last?.transactionHash == null || last.blockNumber === null) return undefined;
    return { transactionId: last.transactionHash, slot: last.blockNumber, amount: permit.amount };
  }
}
