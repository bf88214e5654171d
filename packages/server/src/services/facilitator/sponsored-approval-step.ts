import type { ChainAdapter, ConfirmationOutcome } from '../../chains/chain-adapter.ts';
import type { ExactScheme } from '../../chains/exact-scheme.ts';
import type { SettlementRecord, SponsoredApprovalStep } from '../../domain/records/settlement-records.ts';

/**
 * How long after its claim a settlement waits for the buyer's approval to be mined before it is given
 * up on. The settlement's transaction holds the fee payer's next nonce: a buyer approval that never gets
 * mined (bidding under the network's fee, say) must not hold back every later settlement of this
 * facilitator. Unless the buyer approved Permit2 by other means meanwhile, the settlement is then voided
 * (its nonce spent by the step's void transfer), never sent to revert.
 */
export const APPROVAL_PATIENCE_MS = 120_000;

/**
 * Where the step stands: `ready` for the settlement's transaction, `pending` while waiting on the chain,
 * `void` when the approval did not take effect (SponsoredApprovalStep.voided): the settlement is never
 * sent, its nonce is spent by the void transfer instead.
 */
export type ApprovalStepState = 'ready' | 'pending' | 'void';

/** Thrown by a claim whose buyer approval another settlement already funds (one funding per approval). */
export class ApprovalInUse extends Error {
  constructor(
    readonly payer: string,
    approvalKey: string,
  ) {
    super(
      `the buyer's approval transaction (${approvalKey}) is already funded and broadcast for another payment: pay again once it is mined (then no approval is needed), or sign a new one at the buyer's next nonce`,
    );
  }
}

/**
 * x402's erc20ApprovalGasSponsoring, between a settlement's claim and its own transaction: the fee
 * payer's funding transfer (exactly the buyer's shortfall for the approval's gas), mined first, then the
 * buyer's signed approval, mined or provably never to be. Everything sent is the stored bytes of the
 * claim (SettlementRecord.sponsoredApproval), so running it again — a retry, the settlement finisher
 * after a crash anywhere in it — resends the same transactions, which land at most once: the buyer is
 * never funded twice. Only for a settlement still `claimed` (its own transaction not sent).
 *
 * The funding is mined before the approval can be sent (a node takes no transaction its sender cannot
 * pay for), so a buyer holding its own key can always spend the funding first under the approval's nonce
 * (or take the allowance back after it). The settlement is therefore sent only once the chain shows the
 * allowance it needs (approvalCovers); otherwise the step answers `void` and the settlement is given up
 * on without a reverting transaction. The funding lost that way is bounded by what one approval may cost
 * (MAX_APPROVAL_GAS at MAX_APPROVAL_FEE_MULTIPLE × the network fee), and the payer is never funded again
 * (FacilitatorService.claim).
 */
export async function runApprovalStep(
  chain: ChainAdapter,
  scheme: ExactScheme,
  settlement: SettlementRecord,
  waitMs: number,
  now: number,
): Promise<ApprovalStepState> {
  const step = settlement.sponsoredApproval;
  if (step == null || settlement.status !== 'claimed') return 'ready';
  // The settlement's own bytes were sent before a crash and landed (its nonce is spent): what became of
  // them decides, voided or not.
  if ((await chain.getSignatureStatus(settlement.transactionId)) !== undefined) return 'ready';
  // Decided once, never undone: the void transfer may already be in the pool at the settlement's nonce.
  if (step.voided === true) return 'void';
  if (step.fundingTransaction !== null && step.fundingTransactionId !== null) {
    const funded = await sendAndWait(chain, step.fundingTransaction, step.fundingTransactionId, waitMs);
    if (funded.status === 'pending' || funded.status === 'expired') return 'pending';
  }
  const approved = await sendAndWait(chain, step.approvalTransaction, step.approvalTransactionId, waitMs);
  const wire = new Uint8Array(Buffer.from(step.approvalTransaction, 'base64'));
  if (approved.status === 'pending' || approved.status === 'expired') {
    // Not mined: it never will be once the buyer's nonce moved past it; and the fee payer's nonce held
    // by the settlement is not kept waiting past APPROVAL_PATIENCE_MS.
    const superseded = await scheme.approvalSuperseded?.(wire).catch(() => false);
    if (superseded !== true && now - settlement.createdAt <= APPROVAL_PATIENCE_MS) return 'pending';
  }
  // Claimed before the void transfer existed: sent all the same, as it was then.
  if (step.voidTransaction == null || step.voidTransactionId == null || scheme.approvalCovers === undefined)
    return 'ready';
  // The allowance the settlement spends, whichever transaction gave it; a failed read decides nothing.
  // Once the approval was seen mined, read no earlier than its block: a lagging node (another behind the
  // same RPC) would show no allowance yet and void an honest buyer's settlement.
  const minedIn = 'slot' in approved ? approved.slot : undefined;
  const covers = await scheme.approvalCovers(wire, settlement.amount, minedIn).catch(() => undefined);
  if (covers === undefined) return 'pending';
  return covers ? 'ready' : 'void';
}

/**
 * What the step cost the fee payer, once its funding transfer was mined: the amount given and the
 * transfer's fee (0 without a funding transfer); undefined while it is not mined (the worst case stays
 * charged).
 */
export async function approvalStepCost(
  chain: ChainAdapter,
  step: SponsoredApprovalStep | null | undefined,
): Promise<bigint | undefined> {
  if (step == null || step.fundingTransactionId === null) return 0n;
  const landed = await chain.getTransaction(step.fundingTransactionId).catch(() => undefined);
  return landed?.fee === undefined ? undefined : step.funded + landed.fee;
}

/**
 * Spends the settlement's nonce with the step's stored void transfer (resent as it is, like every
 * stored transaction), and waits for it: its fee once mined, `pending` while it is not.
 */
export async function sendVoid(
  chain: ChainAdapter,
  step: SponsoredApprovalStep,
  waitMs: number,
): Promise<{ readonly fee: bigint | undefined } | 'pending'> {
  if (step.voidTransaction == null || step.voidTransactionId == null) return 'pending';
  const landed = await sendAndWait(chain, step.voidTransaction, step.voidTransactionId, waitMs);
  if (landed.status === 'pending' || landed.status === 'expired') return 'pending';
  const tx = await chain.getTransaction(step.voidTransactionId).catch(() => undefined);
  return { fee: tx?.fee };
}

/** The stored bytes, sent unless already mined (a resend may be refused as known or landed), then awaited. */
async function sendAndWait(
  chain: ChainAdapter,
  wire: string,
  transactionId: string,
  waitMs: number,
): Promise<ConfirmationOutcome> {
  const known = await chain.getSignatureStatus(transactionId);
  if (known !== undefined) return known;
  await chain.broadcast(new Uint8Array(Buffer.from(wire, 'base64'))).catch(() => undefined);
  return chain.waitForConfirmation(transactionId, BigInt(Number.MAX_SAFE_INTEGER), waitMs);
}
