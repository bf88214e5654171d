import { getAddress, type Hash, isAddressEqual, type PublicClient, parseAbi } from 'viem';
import type { LandedPayment } from '../exact-scheme.ts';
import { toChainError } from './evm-errors.ts';
import { paidThroughWrapper } from './paid-through-wrapper.ts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from './permit2-addresses.ts';
import { type SettledPermit, samePermit, settleCallsIn, settledPermitOf } from './permit2-settle-calldata.ts';
import type { ContractCall } from './seller-paid-authorization.ts';

const READS_ABI = parseAbi([
  'function nonceBitmap(address owner, uint256 wordPosition) view returns (uint256)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/**
 * The payment of the permit the built transaction settles (x402 `exact` with Permit2, local mode), once
 * it moved: Permit2's nonce bit for (owner, nonce) is set, and a successful call of the proxy's `settle`
 * for that owner and nonce moved the amount to the witness's recipient, whichever transaction carried it:
 * the buyer's signature fixes recipient and amount, so whoever submitted it paid the seller. Permit2 emits
 * no event naming the nonce it spends, and the proxy's `Settled()` names nothing, so a carrier is found by
 * the token's Transfer event (owner → recipient, the amount) and recognised by its calldata:
 * - a direct call of the proxy's `settle` (or `settleWithPermit`, which approves Permit2 first) for this permit (owner, nonce, token, amount, recipient): the
 *   transaction's one call, which succeeded since it logged the transfer;
 * - or a wrapper (a multicall, a smart account's execute, an ERC-4337 bundle…) whose input carries such a
 *   `settle` call verbatim anywhere in it (settleCallsIn) and whose logs show that it ran: the proxy's
 *   `Settled()` right after the token's Transfer of this payment, once per distinct nonce its input
 *   carries for this owner, token, amount and recipient (paidThroughWrapper). A wrapper may swallow an
 *   inner call's revert (Multicall3's tryAggregate), so its calldata says only what was tried. The permits
 *   one transaction is recognised to pay thus never outnumber the settles of that payment it ran.
 *
 * `never` once a block past the permit's deadline exists and no such carrier was found: Permit2 refuses
 * the permit in any later block, and a nonce spent otherwise (the buyer invalidated it, or signed another
 * permit with it, or a carrier not recognised above spent it) can never be shown to pay this one. A
 * carrier not recognised is one that builds the settle call at run time instead of carrying it, calls the
 * proxy's other entry points, or settles in one transaction several such permits of which one failed.
 * `fromBlock`: a block at which the nonce was still unspent (when the transaction was built or signed),
 * asked only once it is spent; nothing older is searched.
 */
export async function findLandedPermit2(
  client: PublicClient,
  call: ContractCall,
  fromBlock: () => Promise<bigint>,
): Promise<LandedPayment | 'never' | undefined> {
  const permit = settledPermitOf(call.to, call.data);
  if (permit === undefined) return 'never';
  try {
    const spent = async () => {
      // Permit2 keeps unordered nonces as bits: word nonce >> 8, bit nonce & 0xff.
      const bitmap = await client.readContract({
        address: PERMIT2_ADDRESS,
        abi: READS_ABI,
        functionName: 'nonceBitmap',
        args: [permit.owner, permit.nonce >> 8n],
      });
      return ((bitmap >> (permit.nonce & 0xffn)) & 1n) === 1n;
    };
    // Read before the block: a block past the deadline seen after an unspent nonce means unspent for good.
    const wasSpent = await spent();
    const latest = await client.getBlock({ blockTag: 'latest' });
    const pastDeadline = latest.timestamp > permit.deadline;
    if (!wasSpent) {
      if (!pastDeadline) return undefined;
      return (await spent()) ? undefined : 'never';
    }
    const landed = await findSettle(client, permit, await fromBlock());
    if (landed !== undefined) return landed;
    return pastDeadline ? 'never' : undefined;
  } catch (error) {
    throw toChainError(error);
  }
}

async function findSettle(
  client: PublicClient,
  permit: SettledPermit,
  fromBlock: bigint,
): Promise<LandedPayment | undefined> {
  const logs = await client.getLogs({
    address: permit.token,
    event: READS_ABI[1],
    args: { from: permit.owner, to: permit.to },
    fromBlock,
    toBlock: 'latest',
  });
  const looked = new Set<Hash>();
  for (const log of logs) {
    const hash = log.transactionHash;
    if (log.args.value !== permit.amount || hash == null || looked.has(hash)) continue;
    looked.add(hash);
    const carrier = await client.getTransaction({ hash });
    if (carrier.to != null && isAddressEqual(getAddress(carrier.to), EXACT_PERMIT2_PROXY_ADDRESS)) {
      const settled = settledPermitOf(carrier.to, carrier.input);
      // Another permit of the same buyer paying the same amount to the same seller spends another nonce.
      if (settled === undefined || !samePermit(settled, permit)) continue;
      return landedOn(await client.getTransactionReceipt({ hash }));
    }
    // A wrapper: its receipt is asked for only when its input carries a settle of this permit.
    const carried = settleCallsIn(carrier.input);
    if (!carried.some((call) => samePermit(call, permit))) continue;
    const receipt = await client.getTransactionReceipt({ hash });
    if (paidThroughWrapper(permit, carried, receipt.logs)) return landedOn(receipt);
  }
  return undefined;
}

function landedOn(receipt: {
  transactionHash: Hash;
  blockNumber: bigint;
  gasUsed: bigint;
  effectiveGasPrice: bigint;
}): LandedPayment {
  return {
    transactionId: receipt.transactionHash,
    slot: receipt.blockNumber,
    // Found by its Transfer event, which is only in the logs of a transaction that succeeded.
    error: null,
    fee: receipt.gasUsed * receipt.effectiveGasPrice,
  };
}
