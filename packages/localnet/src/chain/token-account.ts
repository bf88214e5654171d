// Reading SPL Token and Token-2022 account layouts: token accounts (165 bytes, or longer with a
// Token-2022 account-type byte of 2) and mints (82 bytes, or longer with an account-type byte of 1).
import { encodeBase58 } from '../wire/base58.ts';

export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const TOKEN_2022_PROGRAM = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';

const ACCOUNT_LEN = 165;
const MINT_LEN = 82;
const ACCOUNT_TYPE_MINT = 1;
const ACCOUNT_TYPE_ACCOUNT = 2;

export function isTokenProgram(owner: string): boolean {
  return owner === TOKEN_PROGRAM || owner === TOKEN_2022_PROGRAM;
}

export interface TokenAccountState {
  readonly mint: string;
  readonly owner: string;
  readonly amount: bigint;
  readonly delegate: string | null;
  readonly state: number;
  readonly isNative: bigint | null;
  readonly delegatedAmount: bigint;
  readonly closeAuthority: string | null;
}

export interface MintState {
  readonly mintAuthority: string | null;
  readonly supply: bigint;
  readonly decimals: number;
  readonly isInitialized: boolean;
  readonly freezeAuthority: string | null;
}

function view(data: Uint8Array): DataView {
  return new DataView(data.buffer, data.byteOffset, data.byteLength);
}

function optionalKey(data: Uint8Array, offset: number): string | null {
  return view(data).getUint32(offset, true) === 1
    ? encodeBase58(data.subarray(offset + 4, offset + 36))
    : null;
}

/** The token account in `data`, or undefined when `data` is not an initialized token account. */
export function decodeTokenAccount(data: Uint8Array): TokenAccountState | undefined {
  if (
    data.length !== ACCOUNT_LEN &&
    !(data.length > ACCOUNT_LEN && data[ACCOUNT_LEN] === ACCOUNT_TYPE_ACCOUNT)
  ) {
    return undefined;
  }
  const v = view(data);
  const state = data[108] as number;
  if (state === 0) return undefined;
  return {
    mint: encodeBase58(data.subarray(0, 32)),
    owner: encodeBase58(data.subarray(32, 64)),
    amount: v.getBigUint64(64, true),
    delegate: optionalKey(data, 72),
    state,
    isNative: v.getUint32(109, true) === 1 ? v.getBigUint64(113, true) : null,
    delegatedAmount: v.getBigUint64(121, true),
    closeAuthority: optionalKey(data, 129),
  };
}

/** The mint in `data`, or undefined when `data` is not a mint. */
export function decodeMint(data: Uint8Array): MintState | undefined {
  if (data.length !== MINT_LEN && !(data.length > ACCOUNT_LEN && data[ACCOUNT_LEN] === ACCOUNT_TYPE_MINT)) {
    return undefined;
  }
  return {
    mintAuthority: optionalKey(data, 0),
    supply: view(data).getBigUint64(36, true),
    decimals: data[44] as number,
    isInitialized: data[45] === 1,
    freezeAuthority: optionalKey(data, 46),
  };
}

/** An initialized mint with no freeze authority, for placing the USDC-like mint at genesis. */
export function encodeMint(mintAuthority: Uint8Array, decimals: number): Uint8Array {
  const data = new Uint8Array(MINT_LEN);
  view(data).setUint32(0, 1, true);
  data.set(mintAuthority, 4);
  data[44] = decimals;
  data[45] = 1;
  return data;
}

/** Agave's `UiTokenAmount`: the atomic amount as text plus its decimal rendering. */
export interface UiTokenAmount {
  readonly amount: string;
  readonly decimals: number;
  readonly uiAmount: number | null;
  readonly uiAmountString: string;
}

/** 10^19 is the largest power of ten a 64-bit usize holds. */
const MAX_USIZE_POWER_OF_TEN = 19;

export function uiTokenAmount(amount: bigint, decimals: number): UiTokenAmount {
  const digits = amount.toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  const uiAmountString = fraction ? `${whole}.${fraction}` : whole;
  // As Agave: `amount as f64 / 10^decimals as f64`, and none when 10^decimals overflows a usize.
  const uiAmount = decimals <= MAX_USIZE_POWER_OF_TEN ? Number(amount) / 10 ** decimals : null;
  return { amount: amount.toString(), decimals, uiAmount, uiAmountString };
}
