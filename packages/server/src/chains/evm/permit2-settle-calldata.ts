import {
  type Address,
  decodeAbiParameters,
  decodeFunctionData,
  getAbiItem,
  getAddress,
  type Hex,
  isAddressEqual,
  toFunctionSelector,
} from 'viem';
import { EXACT_PERMIT2_PROXY_ADDRESS } from './permit2-addresses.ts';
import { EXACT_PERMIT2_PROXY_ABI } from './permit2-proxy-abi.ts';

/** What a call of x402's exact Permit2 proxy's `settle` moves: decoded from its calldata. */
export interface SettledPermit {
  readonly owner: Address;
  readonly token: Address;
  readonly amount: bigint;
  readonly nonce: bigint;
  readonly deadline: bigint;
  readonly to: Address;
}

const SETTLE = getAbiItem({ abi: EXACT_PERMIT2_PROXY_ABI, name: 'settle' });
const SETTLE_SELECTOR = Buffer.from(toFunctionSelector(SETTLE).slice(2), 'hex');
/**
 * settle(permit, owner, witness, signature) without its signature: the permit (token, amount, nonce,
 * deadline), owner and witness (to, validAfter) are static, so they are the call's first 7 words, in place.
 */
const SETTLE_HEAD = [SETTLE.inputs[0], SETTLE.inputs[1], SETTLE.inputs[2]] as const;
const SETTLE_HEAD_BYTES = 7 * 32;

/**
 * Whether `to` and `data` are a call of x402's exact Permit2 proxy's `settle` or `settleWithPermit` (the
 * same transfer, after an EIP-2612 approval of Permit2); its permit if so.
 */
export function settledPermitOf(
  to: string | null | undefined,
  data: Hex | undefined,
): SettledPermit | undefined {
  if (to == null || data === undefined || !isAddressEqual(getAddress(to), EXACT_PERMIT2_PROXY_ADDRESS)) {
    return undefined;
  }
  try {
    const call = decodeFunctionData({ abi: EXACT_PERMIT2_PROXY_ABI, data });
    if (call.functionName === 'settle') {
      const [permit, owner, witness] = call.args;
      return permitOf(permit, owner, witness);
    }
    if (call.functionName === 'settleWithPermit') {
      const [, permit, owner, witness] = call.args;
      return permitOf(permit, owner, witness);
    }
    return undefined;
  } catch {
    return undefined;
  }
}

/**
 * Every `settle` call of the proxy that `input` carries verbatim, wherever in it: at offset 0 for a direct
 * call, further in when a wrapper (Multicall3's aggregate, a smart account's execute, an ERC-4337 bundle)
 * passes the call on as an ABI `bytes` argument, which it copies unchanged. Each occurrence of settle's
 * selector followed by at least settle's static head is read as one call; the signature is not decoded.
 * Only `settle` is looked for: a wrapper carrying `settleWithPermit` is not recognised (its payment is
 * then found only by Permit2's nonce and the permit's deadline, as for any carrier not recognised).
 * So this names candidates only: bytes that merely look like a settle are found too, and a call that was
 * made but reverted inside the transaction is found all the same. Whoever relies on one must prove from
 * the transaction's logs that it ran.
 *
 * Bounded: one pass over the bytes and one fixed-size (224-byte) decode per occurrence. A transaction's
 * input is bounded by the chain's block gas limit (every byte of calldata costs gas), and so is this work.
 * Never throws: input that is not hex, truncated, or garbage yields what fits, possibly nothing.
 */
export function settleCallsIn(input: Hex): SettledPermit[] {
  // Buffer.from stops at the first byte that is not hex instead of throwing.
  const bytes = Buffer.from(input.startsWith('0x') ? input.slice(2) : '', 'hex');
  const found: SettledPermit[] = [];
  const lastStart = bytes.length - SETTLE_SELECTOR.length - SETTLE_HEAD_BYTES;
  for (let at = bytes.indexOf(SETTLE_SELECTOR); at !== -1 && at <= lastStart; ) {
    const headStart = at + SETTLE_SELECTOR.length;
    try {
      const [permit, owner, witness] = decodeAbiParameters(
        SETTLE_HEAD,
        bytes.subarray(headStart, headStart + SETTLE_HEAD_BYTES),
      );
      found.push(permitOf(permit, owner, witness));
    } catch {
      // Static words of an exact length always decode; kept so that odd input can never throw.
    }
    at = bytes.indexOf(SETTLE_SELECTOR, at + 1);
  }
  return found;
}

function permitOf(
  permit: { permitted: { token: Address; amount: bigint }; nonce: bigint; deadline: bigint },
  owner: Address,
  witness: { to: Address },
): SettledPermit {
  return {
    owner: getAddress(owner),
    token: getAddress(permit.permitted.token),
    amount: permit.permitted.amount,
    nonce: permit.nonce,
    deadline: permit.deadline,
    to: getAddress(witness.to),
  };
}

/** Whether two settles move the same amount of the same token from the same owner to the same recipient. */
export function samePayment(a: SettledPermit, b: SettledPermit): boolean {
  return a.owner === b.owner && a.token === b.token && a.amount === b.amount && a.to === b.to;
}

/** Whether two settles spend the same permit: the same payment, and the owner's same Permit2 nonce. */
export function samePermit(a: SettledPermit, b: SettledPermit): boolean {
  return samePayment(a, b) && a.nonce === b.nonce;
}
