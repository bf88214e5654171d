import {
  type Address,
  decodeFunctionData,
  encodeFunctionData,
  getAddress,
  type Hex,
  isAddressEqual,
  parseAbi,
} from 'viem';
import { type Eip2612Permit, isMalformed, type MalformedSponsoring } from './eip2612-gas-sponsoring.ts';
import type { Erc20Approval } from './erc20-approval-gas-sponsoring.ts';

/**
 * x402's `upto` Permit2 proxy (x402UptoPermit2Proxy) as gate402 calls it: the spender every x402 `upto`
 * signature names, at the same CREATE2 address on every chain; on the embedded anvil, gate402's own
 * implementation of its interface (packages/anvil/contracts/UptoPermit2Proxy.sol) is placed there. A
 * test checks the address and the selectors against the stock @x402/evm package and the anvil artifact.
 */
export const UPTO_PERMIT2_PROXY_ADDRESS: Address = '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002';

/** The two entry points that move money; only the witness's facilitator may call them. */
export const UPTO_PERMIT2_PROXY_ABI = parseAbi([
  'struct TokenPermissions { address token; uint256 amount; }',
  'struct PermitTransferFrom { TokenPermissions permitted; uint256 nonce; uint256 deadline; }',
  'struct Witness { address to; address facilitator; uint256 validAfter; }',
  'struct EIP2612Permit { uint256 value; uint256 deadline; bytes32 r; bytes32 s; uint8 v; }',
  'function settle(PermitTransferFrom permit, uint256 amount, address owner, Witness witness, bytes signature)',
  'function settleWithPermit(EIP2612Permit permit2612, PermitTransferFrom permit, uint256 amount, address owner, Witness witness, bytes signature)',
]);

/** A buyer's signed `upto` permit: Permit2's PermitWitnessTransferFrom with x402's upto witness. */
export interface UptoPermit {
  readonly from: Address;
  readonly token: Address;
  /** The signed maximum. */
  readonly amount: bigint;
  readonly spender: Address;
  /** Permit2's unordered nonce: one (owner, nonce) transfers once, whatever the spender or amount. */
  readonly nonce: bigint;
  readonly deadline: bigint;
  readonly to: Address;
  readonly facilitator: Address;
  readonly validAfter: bigint;
  readonly signature: Hex;
  /** x402's eip2612GasSponsoring: the buyer's EIP-2612 permit for Permit2, settled with `settleWithPermit`. */
  readonly eip2612?: Eip2612Permit | MalformedSponsoring;
  /** x402's erc20ApprovalGasSponsoring: the buyer's signed approval, funded and sent before the settlement. */
  readonly erc20Approval?: Erc20Approval | MalformedSponsoring;
}

/** A settle call of the proxy, decoded: the permit's identity and what the call moves. */
export interface UptoSettleCall {
  readonly owner: Address;
  readonly token: Address;
  readonly nonce: bigint;
  readonly deadline: bigint;
  readonly to: Address;
  /** What the call moves (the actual amount), not the signed maximum. */
  readonly amount: bigint;
}

/** The proxy call the facilitator sends to move `amount` (≤ the signed maximum) of `permit`. */
export function uptoSettleCall(permit: UptoPermit, amount: bigint): { to: Address; data: Hex } {
  const settleArgs = [
    {
      permitted: { token: permit.token, amount: permit.amount },
      nonce: permit.nonce,
      deadline: permit.deadline,
    },
    amount,
    permit.from,
    { to: permit.to, facilitator: permit.facilitator, validAfter: permit.validAfter },
    permit.signature,
  ] as const;
  const eip2612 = permit.eip2612;
  // With the buyer's EIP-2612 permit, the approval of Permit2 and the transfer in one call.
  const data =
    eip2612 === undefined || isMalformed(eip2612)
      ? encodeFunctionData({ abi: UPTO_PERMIT2_PROXY_ABI, functionName: 'settle', args: settleArgs })
      : encodeFunctionData({
          abi: UPTO_PERMIT2_PROXY_ABI,
          functionName: 'settleWithPermit',
          args: [
            { value: eip2612.value, deadline: eip2612.deadline, r: eip2612.r, s: eip2612.s, v: eip2612.v },
            ...settleArgs,
          ],
        });
  return { to: UPTO_PERMIT2_PROXY_ADDRESS, data };
}

/** A call of the upto proxy's `settle` or `settleWithPermit`, decoded; undefined for anything else. */
export function uptoSettleCallOf(
  to: string | null | undefined,
  data: Hex | undefined,
): UptoSettleCall | undefined {
  if (to == null || data === undefined || !isAddressEqual(getAddress(to), UPTO_PERMIT2_PROXY_ADDRESS))
    return undefined;
  try {
    const call = decodeFunctionData({ abi: UPTO_PERMIT2_PROXY_ABI, data });
    const [permit, amount, owner, witness] =
      call.functionName === 'settle' ? call.args : [call.args[1], call.args[2], call.args[3], call.args[4]];
    return {
      owner: getAddress(owner),
      token: getAddress(permit.permitted.token),
      nonce: permit.nonce,
      deadline: permit.deadline,
      to: getAddress(witness.to),
      amount,
    };
  } catch {
    return undefined;
  }
}
