import type { SettlementRecord } from '../../domain/records/settlement-records.ts';
import type { SponsoredFeeRepository } from '../../store/store.ts';

/**
 * The count of escrow `upto` channels (Solana payment channels) an account holds open, per network.
 *
 * Each deposit's open has the facilitator's fee payer pay the rent of the channel and its escrow token
 * account (~0.0047 SOL). The daily fee budget reserves it, but keeps only the network fee once the open
 * lands, and the rent comes back only when the sweep reclaims the channel (1,500 slots after its open,
 * and after ~1 h for a channel nobody claims). Without a cap one account (with a colluding buyer making
 * tiny deposits) could tie up any amount of the fee payer's SOL as rent. So every deposit takes one place
 * of the account's X402_UPTO_MAX_OPEN_CHANNELS:
 * - taken in the database transaction that claims the deposit, before anything is signed into storage or
 *   sent, atomically with every other deposit of the account (concurrent deposits never exceed the cap;
 *   a lost or rolled-back claim takes its place back with it);
 * - given back when the deposit fails (its open created no channel) or when the sweep reclaims the
 *   channel's account (its rent is back with the fee payer).
 *
 * Kept in the sponsored-fee ledger (its compare-and-set is what makes the count exact under concurrency)
 * under a `day` that is no date, so no daily budget ever reads it and it never renews.
 */
export const OPEN_CHANNELS_LEDGER = 'upto-open-channels';

/** A deposit refused because the account holds as many open channels as X402_UPTO_MAX_OPEN_CHANNELS. */
export class OpenChannelsExceeded extends Error {
  constructor(limit: number, networkName: string) {
    super(
      `your account holds ${limit} open upto payment channels on ${networkName} (X402_UPTO_MAX_OPEN_CHANNELS), each holding the facilitator's rent until it is claimed and reclaimed; nothing was sent. Claim your open deposits, or retry once the escrow sweep has reclaimed them`,
    );
  }
}

/** Takes one place for a deposit; false (nothing changed) when the account's channels are at `limit`. */
export async function takeOpenChannel(
  fees: SponsoredFeeRepository,
  accountId: string,
  network: string,
  limit: number,
  at: number,
): Promise<boolean> {
  return (await fees.reserve(accountId, network, OPEN_CHANNELS_LEDGER, 1n, BigInt(limit), at)) !== undefined;
}

/**
 * Gives back the place a deposit settlement took (its open failed, or its channel was reclaimed). A
 * deposit with no account (none asked for it) took none. Never below 0 (a deposit from before the cap
 * existed took none either).
 */
export async function releaseOpenChannel(
  fees: SponsoredFeeRepository,
  deposit: Pick<SettlementRecord, 'accountId' | 'network'>,
  at: number,
): Promise<void> {
  if (deposit.accountId == null) return;
  await fees.adjust(deposit.accountId, deposit.network, OPEN_CHANNELS_LEDGER, -1n, at);
}

/** How many places the account holds on `network`. */
export async function openChannels(
  fees: SponsoredFeeRepository,
  accountId: string,
  network: string,
): Promise<bigint> {
  return fees.spent(accountId, network, OPEN_CHANNELS_LEDGER);
}
