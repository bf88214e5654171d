import type { ChainAdapter, ConfirmationOutcome } from '../../chains/chain-adapter.ts';
import type { ExactScheme } from '../../chains/exact-scheme.ts';
import type { SettlementRecord, SponsoredApprovalStep } from '../../domain/records/settlement-records.ts';

/**
 * How long after its claim a settlement waits for the buyer's approval to be mined before its own
 * transaction is sent all the same. The settlement's transaction holds the fee payer's next nonce: a
 * buyer approval that never gets mined (bidding under the network's fee, say) must not hold back every
 * later settlement of this facilitator. Sent without the approval, the settlement reverts (and fails),
 * unless the buyer approved Permit2 by other means meanwhile.
 */
export const APPROVAL_PATIENCE_MS = 120_000;

/** Where the step stands: `ready` for the settlement's transaction, or still waiting on the chain. */
export type ApprovalStepState = 'ready' | 'pending';

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
  if (step.fundingTransaction !== null && step.fundingTransactionId !== null) {
    const funded = await sendAndWait(chain, step.fundingTransaction, step.fundingTransactionId, waitMs);
    if (funded.status === 'pending' || funded.status === 'expired') return 'pending';
  }
  const approved = await sendAndWait(chain, step.approvalTransaction, step.approvalTransactionId, waitMs);
  if (approved.status !== 'pending' && approved.status !== 'expired') return 'ready';
  // Not mined: it never will be once the buyer's nonce moved past it; and the fee payer's nonce held by
  // the settlement is not kept waiting past APPROVAL_PATIENCE_MS.
  const wire = new Uint8Array(Buffer.from(step.approvalTransaction, 'base64'));
  const superseded = await scheme.approvalSuperseded?.(wire).catch(() => false);
  return superseded === true || now - settlement.createdAt > APPROVAL_PATIENCE_MS ? 'ready' : 'pending';
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
