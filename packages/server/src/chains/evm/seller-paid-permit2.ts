import {
  type Address,
  decodeFunctionData,
  getAddress,
  type Hex,
  isAddressEqual,
  type PublicClient,
  parseAbi,
  parseTransaction,
  toHex,
} from 'viem';
import type { LandedPayment } from '../exact-scheme.ts';
import { toChainError } from './evm-errors.ts';
import { EXACT_PERMIT2_PROXY_ADDRESS, PERMIT2_ADDRESS } from './permit2-addresses.ts';
import { EXACT_PERMIT2_PROXY_ABI } from './permit2-proxy-artifact.ts';

const READS_ABI = parseAbi([
  'function nonceBitmap(address owner, uint256 wordPosition) view returns (uint256)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/** What a call of the proxy's `settle` moves: decoded from its calldata. */
interface SettledPermit {
  readonly owner: Address;
  readonly token: Address;
  readonly amount: bigint;
  readonly nonce: bigint;
  readonly deadline: bigint;
  readonly to: Address;
}

/** Whether `to` and `data` are a call of x402's exact Permit2 proxy's `settle`; its permit if so. */
export function settledPermitOf(
  to: string | null | undefined,
  data: Hex | undefined,
): SettledPermit | undefined {
  if (to == null || data === undefined || !isAddressEqual(getAddress(to), EXACT_PERMIT2_PROXY_ADDRESS)) {
    return undefined;
  }
  try {
    const call = decodeFunctionData({ abi: EXACT_PERMIT2_PROXY_ABI, data });
    if (call.functionName !== 'settle') return undefined;
    const [permit, owner, witness] = call.args;
    return {
      owner: getAddress(owner),
      token: getAddress(permit.permitted.token),
      amount: permit.permitted.amount,
      nonce: permit.nonce,
      deadline: permit.deadline,
      to: getAddress(witness.to),
    };
  } catch {
    return undefined;
  }
}

/**
 * The payment of the permit the built transaction settles (x402 `exact` with Permit2, local mode), once
 * it moved: Permit2's nonce bit for (owner, nonce) is set, and a successful call of the proxy's `settle`
 * for that owner and nonce moved the amount to the witness's recipient — found by the token's Transfer
 * event (owner → recipient, the amount), whichever transaction carried it: the buyer's signature fixes
 * recipient and amount, so whoever submitted it paid the seller. Permit2 emits no event naming the nonce
 * it spends, hence the Transfer event and the calldata of its transaction.
 *
 * `never` once a block past the permit's deadline exists and no such transfer was found: Permit2 refuses
 * the permit in any later block, and a nonce spent otherwise (the buyer invalidated it, or signed another
 * permit with it) can never pay this one either. `fromBlock`: a block at which the nonce was still
 * unspent (when the transaction was built or signed), asked only once it is spent; nothing older is
 * searched.
 */
export async function findLandedPermit2(
  client: PublicClient,
  built: Uint8Array,
  fromBlock: () => Promise<bigint>,
): Promise<LandedPayment | 'never' | undefined> {
  const tx = parseTransaction(toHex(built));
  const permit = settledPermitOf(tx.to, tx.data);
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
  for (const log of logs) {
    if (log.args.value !== permit.amount || log.transactionHash == null) continue;
    const carrier = await client.getTransaction({ hash: log.transactionHash });
    const settled = settledPermitOf(carrier.to, carrier.input);
    // Another permit of the same buyer paying the same amount to the same seller spends another nonce.
    if (settled === undefined || settled.owner !== permit.owner || settled.nonce !== permit.nonce) continue;
    const receipt = await client.getTransactionReceipt({ hash: log.transactionHash });
    return {
      transactionId: receipt.transactionHash,
      slot: receipt.blockNumber,
      // The Transfer event is only in the logs of a transaction that succeeded.
      error: null,
      fee: receipt.gasUsed * receipt.effectiveGasPrice,
    };
  }
  return undefined;
}
