import type { SettlementRecord } from '../../domain/records/settlement-records.ts';
import type { SponsoredFeeRepository } from '../../store/store.ts';

/**
 * What an account's escrow `upto` deposits (Solana payment channels) hold of the facilitator, per
 * network: two per-account limits, both taken in the database transaction that claims the deposit,
 * before anything is signed into storage or sent, atomically with every other deposit of the account
 * (concurrent deposits never exceed them; a lost or rolled-back claim takes its share back with it).
 *
 * Each deposit's open has the fee payer pay the rent of the channel account (~0.0027 SOL) and of its
 * escrow token account (~0.0020 SOL). The daily fee budget reserves it, but keeps only the network fee
 * once the open lands. The escrow token account's rent comes back when the channel is claimed (or
 * refunded by the sweep, ~1 h after a deposit nobody claimed); the channel account's only when it is
 * closed, which the program allows 1,500 slots after the channel's open slot (~10 min on mainnet; the
 * sweep reclaims it then), or at once by a claim or refund coming after that. Without a bound one account
 * (with a colluding buyer making tiny deposits) could tie up any amount of the fee payer's SOL as rent.
 *
 * - X402_UPTO_MAX_CHANNEL_RENT (CHANNEL_RENT_LEDGER, lamports): the rent the account's channels hold and
 *   the fee payer has not got back. A deposit reserves both rents; its failure gives both back, its claim
 *   or refund the escrow token account's (and the channel account's when that closed it too), the
 *   sweep's reclaim the channel account's. This is what bounds the fee payer's rent exposure, so a
 *   seller's honest throughput per reclaim window is this budget over the ~0.0027 SOL a claimed channel
 *   holds until reclaimed, not a count of channels.
 * - X402_UPTO_MAX_OPEN_CHANNELS (OPEN_CHANNELS_LEDGER, a count): the escrows holding a buyer's maximum,
 *   deposited and not yet claimed or refunded (each holds both rents for up to ~1 h). Given back when the
 *   deposit fails, when its claim settles, or when the sweep refunds it.
 *
 * Kept in the sponsored-fee ledger (its compare-and-set is what makes the totals exact under
 * concurrency) under `day`s that are no date, so no daily budget ever reads them and they never renew.
 */
export const OPEN_CHANNELS_LEDGER = 'upto-open-channels';
export const CHANNEL_RENT_LEDGER = 'upto-channel-rent';

/** A deposit refused because the account holds as many open channels as X402_UPTO_MAX_OPEN_CHANNELS. */
export class OpenChannelsExceeded extends Error {
  constructor(limit: number, networkName: string) {
    super(
      `your account holds ${limit} upto deposits on ${networkName} that are not claimed yet (X402_UPTO_MAX_OPEN_CHANNELS); nothing was sent. Claim your open deposits, or retry once the escrow sweep has refunded them`,
    );
  }
}

/** A deposit refused because the account's channels hold X402_UPTO_MAX_CHANNEL_RENT of the fee payer's rent. */
export class ChannelRentExceeded extends Error {
  constructor(limitText: string, networkName: string) {
    super(
      `your account's upto payment channels on ${networkName} hold ${limitText} of the facilitator's rent, its limit (X402_UPTO_MAX_CHANNEL_RENT); nothing was sent. Retry once the escrow sweep has reclaimed claimed channels (1,500 slots after their open)`,
    );
  }
}

/** Reserves one deposit's rent; false (nothing changed) when it would take the account over `limit`. */
export async function takeChannelRent(
  fees: SponsoredFeeRepository,
  accountId: string,
  network: string,
  rent: bigint,
  limit: bigint,
  at: number,
): Promise<boolean> {
  return (await fees.reserve(accountId, network, CHANNEL_RENT_LEDGER, rent, limit, at)) !== undefined;
}

/** Gives back rent the fee payer got back from a settlement's channel (never below 0). */
export async function releaseChannelRent(
  fees: SponsoredFeeRepository,
  settlement: Pick<SettlementRecord, 'accountId' | 'network'>,
  rent: bigint,
  at: number,
): Promise<void> {
  if (settlement.accountId == null || rent <= 0n) return;
  await fees.adjust(settlement.accountId, settlement.network, CHANNEL_RENT_LEDGER, -rent, at);
}

/** The rent (lamports) the account's channels hold on `network`. */
export async function channelRentHeld(
  fees: SponsoredFeeRepository,
  accountId: string,
  network: string,
): Promise<bigint> {
  return fees.spent(accountId, network, CHANNEL_RENT_LEDGER);
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
 * Gives back the place a deposit settlement took (its open failed, or its escrow was claimed or refunded). A
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
