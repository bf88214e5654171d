import { type Address, type Hex, keccak256, type PrivateKeyAccount, type PublicClient } from 'viem';
import type { SettlementDraft } from '../exact-scheme.ts';
import type { SponsoredApprovalPlan } from './erc20-approval-gas-sponsoring.ts';
import { toChainError } from './evm-errors.ts';
import { sponsoredApprovalDraft, sponsoredApprovalMaxCost } from './sponsored-approval-draft.ts';

/**
 * The draft of an EVM settlement the fee payer (`account`) sends, `exact` or `upto` alike: `call` priced
 * now (its gas estimated, or simulated after the buyer's approval when `plan` funds one first), the
 * pending count read as the nonce's floor, and signed as EIP-1559 with the nonce the claim allocates.
 */
export async function evmSettlementDraft(
  context: {
    readonly client: PublicClient;
    readonly account: PrivateKeyAccount;
    readonly chainId: number;
    readonly network: string;
  },
  call: { readonly payer: string; readonly to: Address; readonly data: Hex },
  plan: SponsoredApprovalPlan | undefined,
): Promise<SettlementDraft> {
  const { client, account, chainId } = context;
  const { payer, to, data } = call;
  const [gas, fees, pending] = await Promise.all([
    plan?.settleGas ?? client.estimateGas({ account: account.address, to, data }),
    client.estimateFeesPerGas(),
    client.getTransactionCount({ address: account.address, blockTag: 'pending' }),
  ]).catch((error: unknown) => {
    throw toChainError(error);
  });
  // A margin over the estimate: the transfer's storage writes cost the same on every call (a wider one
  // over a simulated use, which leaves out what the call needs beyond it).
  const gasLimit = plan === undefined ? (gas * 12n) / 10n : (gas * 3n) / 2n;
  return {
    // What the fee payer pays at most: every unit of gas it allows, at the most it bids per unit, and
    // what funding the buyer's approval can cost.
    maxFee:
      gasLimit * fees.maxFeePerGas +
      (plan === undefined ? 0n : sponsoredApprovalMaxCost(plan, fees.maxFeePerGas)),
    ...(plan === undefined
      ? {}
      : { sponsoredApproval: sponsoredApprovalDraft(account, chainId, context.network, plan, fees) }),
    nonceFloor: { address: account.address, pending: BigInt(pending) },
    sign: async (nonce) => {
      if (nonce === undefined) throw new Error('an EVM settlement is signed with an allocated nonce');
      const serialized = await account.signTransaction({
        chainId,
        type: 'eip1559',
        to,
        data,
        gas: gasLimit,
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        nonce: Number(nonce),
      });
      return {
        payer,
        transactionId: keccak256(serialized),
        wire: Buffer.from(serialized.slice(2), 'hex'),
        lastValidBlockHeight: null,
        nonce: { address: account.address, value: nonce },
      };
    },
  };
}
