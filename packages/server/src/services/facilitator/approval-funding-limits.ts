import type { SettlementRecord } from '../../domain/records/settlement-records.ts';
import type { Repositories } from '../../store/store.ts';

/**
 * Who the built-in facilitator funds an approval's gas for (x402's erc20ApprovalGasSponsoring), and how
 * often. The funding is mined before the buyer's approval can be sent, so a buyer holding its own key
 * can spend it first under the approval's nonce (or take the allowance back afterwards): the settlement
 * is then voided, never sent (runApprovalStep), but the funding is gone. Two limits make that a
 * one-off of a bounded amount:
 *
 * - Per payer and network, one funding at a time, and none ever again once a funded settlement of the
 *   payer did not settle (its approval superseded, without effect, or its settlement failed). Kept as a
 *   key `payer:<network>:<address>` in the approval claims (SettlementRepository.claimApproval), taken in
 *   the claim's database transaction (so concurrent settles on any instance see it) and given back only
 *   when that settlement settles. Such a payer can still pay with an allowance, or its own gas.
 * - Per account (the seller whose key settles), network and UTC day, at most
 *   X402_MAX_UNSETTLED_APPROVAL_FUNDINGS funded settlements that have not settled (open or failed):
 *   against fresh buyer addresses, each funded once, this caps what one seller's buyers can take out of
 *   its fee budget per day, and every settlement that needs no funding goes on meanwhile. Kept in the
 *   sponsored-fee ledger (its compare-and-set counts exactly under concurrency) under a `day` that no
 *   daily budget reads; a settled one gives its place back.
 */
export const APPROVAL_FUNDINGS_LEDGER = 'approval-fundings';

/** A funding refused before anything is stored or sent (x402 reason erc20_approval_sponsoring_refused). */
export class SponsoringRefused extends Error {
  constructor(
    readonly payer: string,
    message: string,
  ) {
    super(message);
  }
}

/** The payer's key among the approval claims: one funding at a time, held for good if it did not settle. */
export function payerFundingKey(network: string, payer: string): string {
  return `payer:${network}:${payer.toLowerCase()}`;
}

/**
 * Takes the payer's funding place and one of the account's unsettled fundings of the day, inside the
 * claim's transaction (a rolled-back claim gives both back); throws SponsoringRefused when either is
 * taken up. `limit`: X402_MAX_UNSETTLED_APPROVAL_FUNDINGS.
 */
export async function takeFundingPlace(
  repos: Pick<Repositories, 'settlements' | 'sponsoredFees'>,
  claim: {
    readonly network: string;
    readonly networkName: string;
    readonly payer: string;
    readonly settlementKey: string;
    readonly accountId: string;
    readonly day: string;
    readonly limit: number;
    readonly at: number;
  },
): Promise<void> {
  const { network, payer, settlementKey, accountId, day, limit, at } = claim;
  if (!(await repos.settlements.claimApproval(payerFundingKey(network, payer), settlementKey, at))) {
    throw new SponsoringRefused(
      payer,
      `the facilitator funds the approval gas of ${payer} on ${claim.networkName} once at a time, and never again after a funded payment of it did not settle (its approval replaced or taken back): approve Permit2 with the payer's own gas, then pay again`,
    );
  }
  const reserved = await repos.sponsoredFees.reserve(
    accountId,
    network,
    ledgerDay(day),
    1n,
    BigInt(limit),
    at,
  );
  if (reserved === undefined) {
    throw new SponsoringRefused(
      payer,
      `your account has ${limit} payments on ${claim.networkName} today whose buyer's approval gas the facilitator funded and that did not settle (X402_MAX_UNSETTLED_APPROVAL_FUNDINGS): no more are funded until 00:00 UTC; buyers who approve Permit2 themselves still pay`,
    );
  }
}

/**
 * Gives both places back once the funded settlement settled (call in the transaction that settles it):
 * the payer may be funded again, and it no longer counts among the account's unsettled fundings.
 */
export async function releaseFundingPlace(
  repos: Pick<Repositories, 'settlements' | 'sponsoredFees'>,
  settlement: SettlementRecord,
  at: number,
): Promise<void> {
  const step = settlement.sponsoredApproval;
  // Claimed before these limits existed (no void transfer): it took no place.
  if (step?.fundingTransactionId == null || step.voidTransaction == null) return;
  await repos.settlements.releaseApproval(
    payerFundingKey(settlement.network, settlement.payer),
    settlement.key,
  );
  if (settlement.accountId == null || settlement.sponsoredFee == null) return;
  await repos.sponsoredFees.adjust(
    settlement.accountId,
    settlement.network,
    ledgerDay(settlement.sponsoredFee.day),
    -1n,
    at,
  );
}

/** The account's count of the day's unsettled fundings on `network`. */
export async function unsettledFundings(
  repos: Pick<Repositories, 'sponsoredFees'>,
  accountId: string,
  network: string,
  day: string,
): Promise<bigint> {
  return repos.sponsoredFees.spent(accountId, network, ledgerDay(day));
}

function ledgerDay(day: string): string {
  return `${APPROVAL_FUNDINGS_LEDGER}:${day}`;
}
