import { createHash } from 'node:crypto';
import {
  type AccountMeta,
  AccountRole,
  type Address,
  address,
  getAddressEncoder,
  getProgramDerivedAddress,
  type Instruction,
} from '@solana/kit';
import { findAssociatedTokenPda } from '@solana-program/token';
import { encodeBase58 } from '../../domain/base58.ts';
import { SOLANA_MAINNET_ID } from './solana-clusters.ts';

/**
 * x402's payment-channels program (the escrow of the `upto` scheme on Solana): its id, the channel
 * account's layout and the instructions the facilitator sends, as the program documents them
 * (solana-foundation/payment-channels, docs/003-program-instructions.md) and the embedded localnet
 * serves them (packages/localnet/programs/payment-channels).
 */
export const PAYMENT_CHANNELS_PROGRAM = address('CHNLxYvVA28MJP9PrFuDXccuoGXAx7jBacfLEkahyGsX');
export const ED25519_PROGRAM = address('Ed25519SigVerify111111111111111111111111111');
export const INSTRUCTIONS_SYSVAR = address('Sysvar1nstructions1111111111111111111111111');
export const SYSTEM_PROGRAM = address('11111111111111111111111111111111');
export const RENT_SYSVAR = address('SysvarRent111111111111111111111111111111111');
export const ASSOCIATED_TOKEN_PROGRAM = address('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL');

/** Instruction discriminators (the first data byte). */
export const OPEN = 1;
const SETTLE_AND_SEAL = 4;
const DISTRIBUTE = 7;
const RECLAIM = 9;

/** The channel account: 256 bytes. */
export const CHANNEL_SIZE = 256;
/** Slots after its open slot during which a channel's address cannot be reused; reclaim waits them out. */
export const OPEN_SLOT_WINDOW = 1_500n;
/** The whole settled amount goes to the recipients: shares are in basis points of 10,000. */
export const ALL_BPS = 10_000;

export type ChannelStatus = 'open' | 'closing' | 'sealed' | 'distributed';
const STATUSES: readonly ChannelStatus[] = ['open', 'closing', 'sealed', 'distributed'];

/** A channel account as the program stores it. */
export interface ChannelAccount {
  readonly status: ChannelStatus;
  readonly deposit: bigint;
  readonly settled: bigint;
  readonly gracePeriod: number;
  /** sha256 of the distribute preimage (recipient count, then recipient ‖ bps each) fixed at open. */
  readonly distributionHash: string;
  readonly payer: string;
  readonly payee: string;
  readonly authorizedSigner: string;
  readonly mint: string;
  readonly rentPayer: string;
  readonly openSlot: bigint;
}

/** Byte offset of the payee in the channel account (a getProgramAccounts filter). */
export const CHANNEL_PAYEE_OFFSET = 120;

/** Decodes a channel account's data; undefined when it is not one. */
export function decodeChannel(data: Uint8Array): ChannelAccount | undefined {
  if (data.length !== CHANNEL_SIZE || data[0] !== 1) return undefined;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const key = (at: number) => encodeBase58(data.subarray(at, at + 32));
  const status = STATUSES[data[3] ?? 255];
  if (status === undefined) return undefined;
  return {
    status,
    deposit: view.getBigUint64(12, true),
    settled: view.getBigUint64(20, true),
    gracePeriod: view.getUint32(52, true),
    distributionHash: Buffer.from(data.subarray(56, 88)).toString('hex'),
    payer: key(88),
    payee: key(120),
    authorizedSigner: key(152),
    mint: key(184),
    rentPayer: key(216),
    openSlot: view.getBigUint64(248, true),
  };
}

/** A recipient of the settled amount, as open commits to and distribute replays. */
export interface ChannelSplit {
  readonly recipient: string;
  readonly bps: number;
}

/** The distribute preimage (u32 count, then 32-byte recipient ‖ u16 bps each), little-endian. */
export function splitsPreimage(splits: readonly ChannelSplit[]): Uint8Array {
  const bytes = new Uint8Array(4 + 34 * splits.length);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, splits.length, true);
  for (const [i, split] of splits.entries()) {
    bytes.set(getAddressEncoder().encode(address(split.recipient)), 4 + 34 * i);
    view.setUint16(4 + 34 * i + 32, split.bps, true);
  }
  return bytes;
}

/** The channel's distribution hash for `splits` (ChannelAccount.distributionHash). */
export function distributionHashOf(splits: readonly ChannelSplit[]): string {
  return createHash('sha256').update(splitsPreimage(splits)).digest('hex');
}

/** The program's event authority PDA, named by open and distribute. */
export async function eventAuthority(): Promise<Address> {
  const [pda] = await getProgramDerivedAddress({
    programAddress: PAYMENT_CHANNELS_PROGRAM,
    seeds: [new TextEncoder().encode('event_authority')],
  });
  return pda;
}

/** The channel PDA: "channel", payer, payee, mint, authorized signer, salt and open slot (u64 LE). */
export async function channelAddress(seeds: {
  readonly payer: string;
  readonly payee: string;
  readonly mint: string;
  readonly authorizedSigner: string;
  readonly salt: bigint;
  readonly openSlot: bigint;
}): Promise<Address> {
  const u64 = (v: bigint) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, v, true);
    return b;
  };
  const key = (a: string) => getAddressEncoder().encode(address(a));
  const [pda] = await getProgramDerivedAddress({
    programAddress: PAYMENT_CHANNELS_PROGRAM,
    seeds: [
      new TextEncoder().encode('channel'),
      key(seeds.payer),
      key(seeds.payee),
      key(seeds.mint),
      key(seeds.authorizedSigner),
      u64(seeds.salt),
      u64(seeds.openSlot),
    ],
  });
  return pda;
}

export async function tokenAccountOf(owner: string, mint: string, tokenProgram: string): Promise<Address> {
  const [ata] = await findAssociatedTokenPda({
    owner: address(owner),
    mint: address(mint),
    tokenProgram: address(tokenProgram),
  });
  return ata;
}

/**
 * The owner of the token account distribute sweeps rounding dust to: the program fixes it per
 * cluster. The embedded localnet's build fixes Solana devnet's (the network it stands in for).
 */
export function treasuryOwner(network: string): Address {
  return network === SOLANA_MAINNET_ID ? MAINNET_TREASURY_OWNER : DEVNET_TREASURY_OWNER;
}
const DEVNET_TREASURY_OWNER = address('4zTeC5mVqWLruDexgU2mV66p9t5vCA9JyiZqdGDUspap');
const MAINNET_TREASURY_OWNER = address(
  encodeBase58(Buffer.from('b041d9d337b721be57894eb69c3b6809a53a0e2b6a2399fc7d5b7eda8cac89aa', 'hex')),
);

/**
 * settleAndSeal (4): the payee (the facilitator) applies the voucher the Ed25519 instruction just
 * before it carries (`withVoucher`), or none, and seals the channel: nothing can be settled after.
 */
export function settleAndSealInstruction(payee: string, channel: string, withVoucher: boolean): Instruction {
  return {
    programAddress: PAYMENT_CHANNELS_PROGRAM,
    accounts: [
      { address: address(payee), role: AccountRole.READONLY_SIGNER },
      { address: address(channel), role: AccountRole.WRITABLE },
      { address: INSTRUCTIONS_SYSVAR, role: AccountRole.READONLY },
    ],
    data: new Uint8Array([SETTLE_AND_SEAL, withVoucher ? 1 : 0]),
  };
}

/**
 * distribute (7) of a sealed channel: the settled amount to the recipients, the rest of the deposit
 * back to the payer, the escrow token account closed (its rent to the rent payer).
 */
export async function distributeInstruction(
  channel: ChannelAccount & { readonly address: string },
  splits: readonly ChannelSplit[],
  tokenProgram: string,
  network: string,
): Promise<Instruction> {
  const { mint } = channel;
  const w = (a: string): AccountMeta => ({ address: address(a), role: AccountRole.WRITABLE });
  const r = (a: string): AccountMeta => ({ address: address(a), role: AccountRole.READONLY });
  const preimage = splitsPreimage(splits);
  const data = new Uint8Array(1 + preimage.length);
  data[0] = DISTRIBUTE;
  data.set(preimage, 1);
  return {
    programAddress: PAYMENT_CHANNELS_PROGRAM,
    accounts: [
      w(channel.address),
      w(channel.payer),
      w(channel.rentPayer),
      w(await tokenAccountOf(channel.address, mint, tokenProgram)),
      w(await tokenAccountOf(channel.payer, mint, tokenProgram)),
      w(await tokenAccountOf(channel.payee, mint, tokenProgram)),
      w(await tokenAccountOf(treasuryOwner(network), mint, tokenProgram)),
      r(mint),
      r(tokenProgram),
      r(await eventAuthority()),
      r(PAYMENT_CHANNELS_PROGRAM),
      ...(await Promise.all(splits.map((s) => tokenAccountOf(s.recipient, mint, tokenProgram)))).map(w),
    ],
    data,
  };
}

/** reclaim (9): a distributed channel's account closed, its rent to the rent payer, once the open-slot window passed. */
export function reclaimInstruction(channel: string, rentPayer: string): Instruction {
  return {
    programAddress: PAYMENT_CHANNELS_PROGRAM,
    accounts: [
      { address: address(channel), role: AccountRole.WRITABLE },
      { address: address(rentPayer), role: AccountRole.WRITABLE },
    ],
    data: new Uint8Array([RECLAIM]),
  };
}
