import {
  type Address,
  decodeFunctionData,
  getAddress,
  type Hex,
  isAddressEqual,
  type PublicClient,
  parseAbi,
  parseEventLogs,
  parseTransaction,
  serializeTransaction,
  toHex,
} from 'viem';
import type { LandedPayment, SellerTransaction } from '../exact-scheme.ts';
import { toChainError } from './evm-errors.ts';

const EIP3009_ABI = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/** The call a transaction makes (a built one's, read back from its bytes, or one made from a payload). */
export interface ContractCall {
  readonly to: string | null | undefined;
  readonly data: Hex | undefined;
}

/** The call the transaction `wire` (serialized) makes. */
export function callOf(wire: Uint8Array): ContractCall {
  const { to, data } = parseTransaction(toHex(wire));
  return { to, data };
}

/** As for local-mode sends: gate402's deadline for a transaction built now, in blocks. */
export const LOCAL_VALIDITY_BLOCKS = 150n;

/**
 * x402 `exact` on EVM in local mode: the seller submits the buyer's signed transfer itself. The answer is
 * an unsigned EIP-1559 transaction from the seller calling `target` with `data` (the token's
 * `transferWithAuthorization` for EIP-3009, x402's Permit2 proxy's `settle` for Permit2) with the buyer's
 * signature, with the seller's next nonce (its pending count on the node), gas estimated as the seller
 * with a margin, and the node's fee suggestion. `validBefore` (Unix seconds): no block at or after it
 * can carry the transfer.
 */
export async function sellerAuthorizationTransaction(
  client: PublicClient,
  chainId: number,
  seller: string,
  target: string,
  data: Hex,
  validBefore: bigint,
): Promise<SellerTransaction> {
  const from = getAddress(seller);
  const to = getAddress(target);
  try {
    const [gas, fees, nonce, block] = await Promise.all([
      client.estimateGas({ account: from, to, data }),
      client.estimateFeesPerGas(),
      client.getTransactionCount({ address: from, blockTag: 'pending' }),
      client.getBlockNumber(),
    ]);
    // The transfer's storage writes cost the same on every call: a margin covers the rest.
    const gasLimit = (gas * 12n) / 10n;
    const unsigned = serializeTransaction({
      chainId,
      type: 'eip1559',
      to,
      data,
      value: 0n,
      gas: gasLimit,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      nonce,
    });
    return {
      unsigned: Buffer.from(unsigned.slice(2), 'hex'),
      lastValidBlockHeight: block + LOCAL_VALIDITY_BLOCKS,
      validUntil: Number(validBefore) * 1000,
      fee: gasLimit * fees.maxFeePerGas,
    };
  } catch (error) {
    throw toChainError(error);
  }
}

/**
 * The payment of the authorization the built transaction submits, once it is used: found by the
 * token's AuthorizationUsed event for (authorizer, nonce), whichever transaction carried it — the
 * transfer's recipient is fixed by the buyer's signature, so whoever submitted it paid the seller.
 * But a nonce is only the signer's choice: nothing stops a buyer from signing a second authorization
 * with the same nonce (to itself, say) and using that one first. So the carrier counts only if it also
 * moved this authorization's value from the authorizer to its recipient (the token's Transfer event);
 * a nonce spent otherwise is `never`: this authorization can no longer be used.
 * `never` also once a block at or past validBefore exists and the authorization is still unused: no later
 * block can use it. `fromBlock`: a block at which the authorization was still unused (when the
 * transaction was built or signed), asked only once it is used; nothing older is searched.
 */
export async function findLandedAuthorization(
  client: PublicClient,
  call: ContractCall,
  fromBlock: () => Promise<bigint>,
): Promise<LandedPayment | 'never' | undefined> {
  if (call.to == null || call.data === undefined) return 'never';
  const { args } = decodeFunctionData({ abi: EIP3009_ABI, data: call.data });
  const [authorizer, recipient, value, , validBefore, nonce] = args as readonly [
    Address,
    Address,
    bigint,
    bigint,
    bigint,
    Hex,
    Hex,
  ];
  const token = getAddress(call.to);
  try {
    const used = () =>
      client.readContract({
        address: token,
        abi: EIP3009_ABI,
        functionName: 'authorizationState',
        args: [authorizer, nonce],
      });
    if (!(await used())) {
      const latest = await client.getBlock({ blockTag: 'latest' });
      if (latest.timestamp < validBefore) return undefined;
      // A block at validBefore exists; unused at it (or any later block) means unused for good.
      return (await used()) ? undefined : 'never';
    }
    const [log] = await client.getLogs({
      address: token,
      event: EIP3009_ABI[2],
      args: { authorizer, nonce },
      fromBlock: await fromBlock(),
      toBlock: 'latest',
    });
    if (log?.transactionHash == null) return undefined;
    const receipt = await client.getTransactionReceipt({ hash: log.transactionHash });
    const transfers = parseEventLogs({ abi: EIP3009_ABI, eventName: 'Transfer', logs: receipt.logs });
    const paid = transfers.some(
      (t) =>
        isAddressEqual(t.address, token) &&
        isAddressEqual(t.args.from, authorizer) &&
        isAddressEqual(t.args.to, recipient) &&
        t.args.value === value,
    );
    if (!paid) return 'never';
    return {
      transactionId: receipt.transactionHash,
      slot: receipt.blockNumber,
      // The event is only emitted by a transfer that happened.
      error: null,
      fee: receipt.gasUsed * receipt.effectiveGasPrice,
    };
  } catch (error) {
    throw toChainError(error);
  }
}
