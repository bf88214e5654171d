import { getAbiItem, isAddressEqual, type Log, pad, parseAbi, toEventSelector } from 'viem';
import { EXACT_PERMIT2_PROXY_ADDRESS } from './permit2-addresses.ts';
import { EXACT_PERMIT2_PROXY_ABI } from './permit2-proxy-abi.ts';
import { type SettledPermit, samePayment } from './permit2-settle-calldata.ts';

/** What of a transaction's logs this reads. */
export type SettleLog = Pick<Log, 'address' | 'topics' | 'data'>;

const SETTLED_TOPIC = toEventSelector(getAbiItem({ abi: EXACT_PERMIT2_PROXY_ABI, name: 'Settled' }));
const TRANSFER_TOPIC = toEventSelector(
  parseAbi(['event Transfer(address indexed from, address indexed to, uint256 value)'])[0],
);

/**
 * Whether a transaction that did not call the proxy itself but whose input carries the settle calls
 * `carried` (settleCallsIn), and that succeeded with `logs`, paid `permit`. A wrapper may swallow an
 * inner call's revert (Multicall3's tryAggregate, a smart account's batch that allows failures), so the
 * calldata says only what was tried; the logs say what ran. Yes only if `carried` holds a settle of this
 * very permit, and the logs show at least as many settles paying it (owner, token, amount, recipient) as
 * `carried` holds distinct nonces paying it: with fewer, one of them failed and nothing says which.
 *
 * Invariant: the permits one transaction is found to pay never outnumber the settles paying them that it
 * ran, whatever its calldata holds (decoys, the same call twice, a settle built at run time).
 */
export function paidThroughWrapper(
  permit: SettledPermit,
  carried: readonly SettledPermit[],
  logs: readonly SettleLog[],
): boolean {
  const paying = carried.filter((call) => samePayment(call, permit));
  if (!paying.some((call) => call.nonce === permit.nonce)) return false;
  const nonces = new Set(paying.map((call) => call.nonce));
  return succeededSettles(permit, logs) >= nonces.size;
}

/**
 * How many settles paying `payment` (its owner, token, amount, recipient; any nonce) ran, by the logs of
 * their transaction: the proxy's `Settled()` right after the token's Transfer of the payment. The
 * proxy's settle emits `Settled()` as soon as Permit2's transfer returns, whose last event is the token's
 * Transfer; the logs of a call that reverted are discarded with it, so each such pair is a settle that ran.
 */
function succeededSettles(payment: SettledPermit, logs: readonly SettleLog[]): number {
  const transferTopics = [TRANSFER_TOPIC, pad(payment.owner), pad(payment.to)].map((topic) =>
    topic.toLowerCase(),
  );
  const isTransfer = (log: SettleLog) =>
    isAddressEqual(log.address, payment.token) &&
    log.topics.length === 3 &&
    log.topics.every((topic, i) => topic.toLowerCase() === transferTopics[i]) &&
    log.data.length === 66 &&
    BigInt(log.data) === payment.amount;
  const isSettled = (log: SettleLog) =>
    isAddressEqual(log.address, EXACT_PERMIT2_PROXY_ADDRESS) &&
    log.topics.length === 1 &&
    log.topics[0]?.toLowerCase() === SETTLED_TOPIC;
  let settles = 0;
  for (const [i, log] of logs.entries()) {
    const before = logs[i - 1];
    if (isSettled(log) && before !== undefined && isTransfer(before)) settles += 1;
  }
  return settles;
}
