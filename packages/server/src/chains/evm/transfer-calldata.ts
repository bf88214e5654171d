import {
  type Address,
  bytesToHex,
  concatHex,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  hexToBytes,
  isAddress,
  toFunctionSelector,
} from 'viem';
import { ChainError } from '../chain-error.ts';

/**
 * What gate402 writes into the calldata of a native transfer, since EVM has no memo program and no way
 * to add a read-only account:
 *
 *     calldata = reference (20 bytes, when given) ‖ memo (UTF-8, when given)
 *
 * A plain transfer to an account without code ignores its calldata (it only costs gas), so the bytes stay
 * on chain for anyone to read. Decoding works on any transaction: calldata that is entirely text is a
 * memo; otherwise 20 bytes followed by text (or nothing) are a reference and a memo. A random 20-byte
 * reference is text by chance with odds below one in 10^8, so the two layouts do not collide in practice.
 * Anything else (a contract call) has neither.
 */
export interface TransferNote {
  /** A 20-byte address, EIP-55 checksummed when decoded. */
  readonly reference?: string;
  readonly memo?: string;
}

const REFERENCE_BYTES = 20;
const utf8 = new TextDecoder('utf-8', { fatal: true });
/** Control characters other than tab and line breaks: not something a person wrote. */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f) return true;
  }
  return false;
}

export function encodeTransferNote(note: TransferNote): Hex | undefined {
  if (note.reference === undefined && note.memo === undefined) return undefined;
  if (note.reference !== undefined && !isAddress(note.reference, { strict: false })) {
    throw new ChainError('invalid_transaction', 'an EVM reference must be a 20-byte 0x address');
  }
  const reference = note.reference === undefined ? new Uint8Array() : hexToBytes(note.reference as Hex);
  const memo = new TextEncoder().encode(note.memo ?? '');
  const data = new Uint8Array(reference.length + memo.length);
  data.set(reference);
  data.set(memo, reference.length);
  return data.length === 0 ? undefined : bytesToHex(data);
}

export function decodeTransferNote(data: Hex): TransferNote {
  const bytes = hexToBytes(data);
  if (bytes.length === 0) return {};
  const whole = text(bytes);
  if (whole !== undefined) return { memo: whole };
  if (bytes.length < REFERENCE_BYTES) return {};
  const rest = bytes.subarray(REFERENCE_BYTES);
  const memo = rest.length === 0 ? '' : text(rest);
  if (memo === undefined) return {};
  const reference = getAddress(bytesToHex(bytes.subarray(0, REFERENCE_BYTES)));
  return memo === '' ? { reference } : { reference, memo };
}

/** ERC-20 transfer(address,uint256): the selector and two 32-byte words. */
const TOKEN_TRANSFER_SELECTOR = toFunctionSelector('transfer(address,uint256)');
const TOKEN_TRANSFER_BYTES = 4 + 32 + 32;

/**
 * The calldata of an ERC-20 transfer that carries a note: `transfer(to, amount)` ‖ reference ‖ memo.
 * The ABI decoder of a Solidity contract reads the arguments it expects and ignores bytes after them,
 * so the note changes nothing of what the call does, and stays on chain beside it.
 */
export function encodeTokenTransferCalldata(to: Address, amount: bigint, note: TransferNote): Hex {
  const call = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] });
  const noted = encodeTransferNote(note);
  return noted === undefined ? call : concatHex([call, noted]);
}

/** The note of any transaction's calldata: a plain transfer's, or the one after an ERC-20 transfer call. */
export function decodeCalldataNote(data: Hex): TransferNote {
  const bytes = hexToBytes(data);
  if (bytes.length >= TOKEN_TRANSFER_BYTES && bytesToHex(bytes.subarray(0, 4)) === TOKEN_TRANSFER_SELECTOR) {
    return decodeTransferNote(bytesToHex(bytes.subarray(TOKEN_TRANSFER_BYTES)));
  }
  return decodeTransferNote(data);
}

function text(bytes: Uint8Array): string | undefined {
  try {
    const decoded = utf8.decode(bytes);
    return hasControlCharacter(decoded) ? undefined : decoded;
  } catch {
    return undefined;
  }
}
