// Token amounts as Agave renders them (`token_amount_to_ui_amount_v3`): a Token-2022 mint with an
// InterestBearingConfig or a ScaledUiAmountConfig shows its balances with the interest accrued or the
// multiplier applied at the bank's unix time — `uiAmountString` is the amount with interest (or the
// scaled amount floored to whole base units) printed with the mint's decimals (Rust's `{:.N}`, half to
// even on the exact value) and trailing zeros trimmed, and `uiAmount` is that string read back as an
// f64. Other mints: `uiTokenAmount`.

import { decodeBase58 } from '../wire/base58.ts';
import type { AccountSnapshot } from './account-snapshot.ts';
import { decodeMint, TOKEN_2022_PROGRAM, type UiTokenAmount, uiTokenAmount } from './token-account.ts';
import { fixedExtension } from './token-extension-tlv.ts';

const INTEREST_BEARING_CONFIG = 10;
const SCALED_UI_AMOUNT_CONFIG = 25;
/** spl-token-2022's interest constants. */
const SECONDS_PER_YEAR = 60 * 60 * 24 * 365.24;
const ONE_IN_BASIS_POINTS = 10_000;

/** Renders amounts of one mint. */
export type UiAmountOf = (amount: bigint) => UiTokenAmount;

/**
 * How amounts of the mint with `mintData` read at `unixTimestamp`: `decimals` plus the mint's interest or
 * multiplier, if it is a Token-2022 mint that has one (interest first, as Agave).
 */
export function uiAmountsFor(
  mintData: Uint8Array | undefined,
  mintOwner: string | undefined,
  decimals: number,
  unixTimestamp: bigint,
): UiAmountOf {
  const special =
    mintData !== undefined && mintOwner === TOKEN_2022_PROGRAM
      ? scaledUiAmounts(mintData, decimals, unixTimestamp)
      : undefined;
  return special ?? ((amount) => uiTokenAmount(amount, decimals));
}

/**
 * How amounts of a Token-2022 mint with an InterestBearingConfig (first, as Agave) or a
 * ScaledUiAmountConfig read at `unixTimestamp`; undefined for a mint with neither.
 */
export function scaledUiAmounts(
  mintData: Uint8Array,
  decimals: number,
  unixTimestamp: bigint,
): UiAmountOf | undefined {
  const interest = fixedExtension(mintData, INTEREST_BEARING_CONFIG);
  if (interest) {
    const scale = interestScale(interest, decimals, unixTimestamp);
    return (amount) => uiAmountFrom(amount, decimals, Number(amount) * scale);
  }
  const scaled = fixedExtension(mintData, SCALED_UI_AMOUNT_CONFIG);
  if (scaled) {
    const effective = scaled.readBigInt64LE(40);
    const multiplier = unixTimestamp >= effective ? scaled.readDoubleLE(48) : scaled.readDoubleLE(32);
    // Floored to whole base units before the decimals (spl-token-2022's "never overstate a balance").
    return (amount) =>
      uiAmountFrom(amount, decimals, Math.trunc(Number(amount) * multiplier) / 10 ** decimals);
  }
  return undefined;
}

/** What the amounts of a mint are read from: the chain now, at the Clock's unix time. */
export interface MintSource {
  getAccount(key: Uint8Array): AccountSnapshot | null | undefined;
  latestBlock(): { readonly blockTime: number };
}

/** uiAmountsFor the mint at `mint` as the chain holds it now, at the Clock's unix time. */
export function uiAmountsOfMint(chain: MintSource, mint: string, decimals: number): UiAmountOf {
  const key = decodeBase58(mint);
  const account = key?.length === 32 ? chain.getAccount(key) : null;
  return uiAmountsFor(account?.data, account?.owner, decimals, BigInt(chain.latestBlock().blockTime));
}

/** uiAmountsFor a mint account already read (getTokenSupply, getTokenLargestAccounts). */
export function uiAmountsOfMintAccount(
  chain: MintSource,
  mint: { data: Uint8Array; owner: string },
): UiAmountOf | undefined {
  const state = decodeMint(mint.data);
  if (!state) return undefined;
  return uiAmountsFor(mint.data, mint.owner, state.decimals, BigInt(chain.latestBlock().blockTime));
}

/** InterestBearingConfig's total scale: exp of each period's rate × time, over 10^decimals. */
function interestScale(config: Buffer, decimals: number, now: bigint): number {
  const initialization = config.readBigInt64LE(32);
  const preUpdateAverageRate = BigInt(config.readInt16LE(40));
  const lastUpdate = config.readBigInt64LE(42);
  const currentRate = BigInt(config.readInt16LE(50));
  const exp = (rate: bigint, seconds: bigint) =>
    Math.exp(Number(rate * seconds) / SECONDS_PER_YEAR / ONE_IN_BASIS_POINTS);
  return (
    (exp(preUpdateAverageRate, lastUpdate - initialization) * exp(currentRate, now - lastUpdate)) /
    10 ** decimals
  );
}

/** The amount shown as `ui` (an f64), printed with the mint's decimals and trimmed, as spl-token-2022. */
function uiAmountFrom(amount: bigint, decimals: number, ui: number): UiTokenAmount {
  let text = formatFixed(ui, decimals);
  if (decimals > 0) text = text.replace(/0+$/, '').replace(/\.$/, '');
  const uiAmount = Number(text);
  return {
    amount: amount.toString(),
    decimals,
    // f64::from_str: "inf" and "NaN" read back as themselves; JSON has no such numbers (null, as serde).
    uiAmount: Number.isFinite(uiAmount) ? uiAmount : null,
    uiAmountString: text,
  };
}

/**
 * Rust's `format!("{:.N}", x)` for a finite non-negative f64: the exact binary value rounded to N
 * decimals, half to even, in plain digits (JavaScript's toFixed rounds ties up and switches to
 * exponent notation from 1e21).
 */
export function formatFixed(x: number, places: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const negative = x < 0 || Object.is(x, -0);
  const bits = new DataView(new ArrayBuffer(8));
  bits.setFloat64(0, Math.abs(x));
  const hi = bits.getUint32(0);
  const lo = bits.getUint32(4);
  const biased = (hi >>> 20) & 0x7ff;
  let mantissa = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let exponent: number;
  if (biased === 0) exponent = -1074;
  else {
    mantissa |= 1n << 52n;
    exponent = biased - 1075;
  }
  // value = mantissa × 2^exponent; scaled = value × 10^places, rounded half to even.
  const ten = 10n ** BigInt(places);
  let scaled: bigint;
  if (exponent >= 0) scaled = (mantissa << BigInt(exponent)) * ten;
  else {
    const numerator = mantissa * ten;
    const denominator = 1n << BigInt(-exponent);
    scaled = numerator / denominator;
    const twice = 2n * (numerator % denominator);
    if (twice > denominator || (twice === denominator && scaled % 2n === 1n)) scaled += 1n;
  }
  const digits = scaled.toString().padStart(places + 1, '0');
  const text = places > 0 ? `${digits.slice(0, -places)}.${digits.slice(-places)}` : digits;
  return negative ? `-${text}` : text;
}
