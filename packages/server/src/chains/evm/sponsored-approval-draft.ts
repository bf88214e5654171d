import { hexToBytes, keccak256, type PrivateKeyAccount, type PublicClient } from 'viem';
import type { SponsoredApprovalDraft } from '../exact-scheme.ts';
import {
  permit2Allowance,
  planSponsoredApproval,
  type SponsoredApprovalPlan,
  type SponsoredApprovalRequest,
} from './erc20-approval-gas-sponsoring.ts';

/** The gas of a plain transfer of the native currency to an account without code (the funding). */
const FUNDING_GAS = 21_000n;

/**
 * x402's erc20ApprovalGasSponsoring at settlement time: the plan (planSponsoredApproval) when the payload
 * carries a buyer approval, no EIP-2612 permit, and the payer still has not approved Permit2 for the
 * amount; undefined when nothing needs approving. Throws when the approval no longer passes its checks
 * (the settle then verifies again and answers why).
 */
export async function sponsoredApprovalPlanNow(
  context: {
    readonly client: PublicClient;
    readonly chainId: number;
    readonly feePayer: `0x${string}`;
    readonly maxGas: bigint;
  },
  request: SponsoredApprovalRequest,
  asset: `0x${string}`,
): Promise<SponsoredApprovalPlan | undefined> {
  if (request.approval === undefined || request.eip2612 !== undefined) return undefined;
  if ((await permit2Allowance(context.client, asset, request.payer)) >= request.amount) return undefined;
  const plan = await planSponsoredApproval(context, request, asset);
  if ('valid' in plan) throw new Error(`the buyer's approval no longer passes: ${plan.message}`);
  return plan;
}

/**
 * The step before the settlement: the buyer's approval as signed, and, when the buyer lacks native
 * currency for its gas, the fee payer's transfer of exactly that shortfall (signed with its own nonce,
 * at the fees the settlement bids).
 */
export function sponsoredApprovalDraft(
  account: PrivateKeyAccount,
  chainId: number,
  network: string,
  plan: SponsoredApprovalPlan,
  fees: { readonly maxFeePerGas: bigint; readonly maxPriorityFeePerGas: bigint },
): SponsoredApprovalDraft {
  const { approval, shortfall } = plan;
  const transfer = async (to: `0x${string}`, value: bigint, nonce: bigint) => {
    const serialized = await account.signTransaction({
      chainId,
      type: 'eip1559',
      to,
      value,
      gas: FUNDING_GAS,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      nonce: Number(nonce),
    });
    return {
      payer: approval.signer,
      transactionId: keccak256(serialized),
      wire: hexToBytes(serialized),
      lastValidBlockHeight: null,
      nonce: { address: account.address, value: nonce },
    };
  };
  return {
    key: `${network}:${approval.signer}:${approval.nonce}`,
    payer: approval.signer,
    wire: hexToBytes(approval.wire),
    transactionId: approval.transactionId,
    // Nothing moves: it only spends the settlement's nonce, for 21,000 gas instead of a reverting settle.
    signVoid: (nonce: bigint) => transfer(account.address, 0n, nonce),
    ...(shortfall === 0n
      ? {}
      : {
          funding: {
            amount: shortfall,
            sign: (nonce: bigint) => transfer(approval.signer, shortfall, nonce),
          },
        }),
  };
}

/** What the step can cost the fee payer at most: the funding transfer's amount and its fee. */
export function sponsoredApprovalMaxCost(plan: SponsoredApprovalPlan, maxFeePerGas: bigint): bigint {
  return plan.shortfall === 0n ? 0n : plan.shortfall + FUNDING_GAS * maxFeePerGas;
}
