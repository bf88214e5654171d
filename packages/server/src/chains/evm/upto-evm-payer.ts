import type { SchemeNetworkClient } from '@x402/core/types';
import type { ClientEvmSigner } from '@x402/evm';
import {
  type Address,
  bytesToHex,
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
import { PERMIT2_ADDRESS } from './permit2-addresses.ts';
import { uptoPermitOf } from './upto-evm-scheme.ts';
import { uptoSettleCallOf } from './upto-permit2-proxy.ts';

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
      if (!(await nonceSpentAt(permit.from, permit.nonce, 'latest'))) return undefined;
      return spentNonceSettlement(
        permit,
        logs.filter((log) => log.transactionHash != null && (log.args.value ?? 0n) <= permit.amount),
      );
    },
    async nonceSpent(payload) {
      const permit = uptoPermitOf(payload);
      return permit !== undefined && (await nonceSpentAt(permit.from, permit.nonce, 'latest'));
    },
  };

  /** Whether Permit2 holds `nonce` of `owner` spent at `block` (its unordered-nonce bitmap). */
  async function nonceSpentAt(owner: Address, nonce: bigint, block: bigint | 'latest'): Promise<boolean> {
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
      throw new ChainError('unavailable', `could not read the Permit2 nonce bitmap: ${String(error)}`);
    }
  }

  /**
   * The settlement of a permit whose nonce is spent though no transaction calling the proxy carries it:
   * the one Transfer (owner → payee, at most the maximum) in the block where the nonce went from unspent
   * to spent (historical reads). When that does not single out one transfer (several in that block, or
   * the node keeps no state that old), the SIGNED MAXIMUM is recorded with the likeliest transaction:
   * never less than was taken, so the spend caps stay safe. undefined when no such transfer was seen.
   */
  async function spentNonceSettlement(
    permit: NonNullable<ReturnType<typeof uptoPermitOf>>,
    candidates: readonly {
      transactionHash: Hex | null;
      blockNumber: bigint | null;
      args: { value?: bigint | undefined };
    }[],
  ): Promise<UptoSettlementFound | undefined> {
    const blocks = [...new Set(candidates.map((log) => log.blockNumber).filter((b) => b !== null))];
    for (const block of blocks) {
      const flipped = await Promise.all([
        nonceSpentAt(permit.from, permit.nonce, block - 1n),
        nonceSpentAt(permit.from, permit.nonce, block),
      ]).then(
        ([before, after]) => !before && after,
        () => false,
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
    const last = candidates.at(-1);
    if (last?.transactionHash == null || last.blockNumber === null) return undefined;
    return { transactionId: last.transactionHash, slot: last.blockNumber, amount: permit.amount };
  }
}
