// The SPL Memo program ids this chain serves. LiteSVM preloads Memo v1 and v2; @solana-program/memo
// 0.15 (what x402 clients use) defaults to a newer id that LiteSVM does not ship, so the chain
// serves LiteSVM's own Memo v2 program under that id as well: same program, same behaviour
// (logs the UTF-8 memo, requires every account passed to it to have signed).
import type { LiteSvm } from 'litesvm/dist/internal.js';
import { decodeBase58 } from '../wire/base58.ts';

export const MEMO_V1_PROGRAM = 'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo';
export const MEMO_V2_PROGRAM = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr';
/** `MEMO_PROGRAM_ADDRESS` of @solana-program/memo 0.15. */
export const MEMO_NEW_PROGRAM = 'Memo4c2pN8afCj432Lb7RMVKi9PbQnnW7ewFFaV3oAH';

/** Every id whose instructions are memos (Agave's memo column, jsonParsed `spl-memo`). */
export const MEMO_PROGRAMS: readonly string[] = [MEMO_V1_PROGRAM, MEMO_V2_PROGRAM, MEMO_NEW_PROGRAM];

/**
 * Deploys the Memo v2 ELF under MEMO_NEW_PROGRAM when it is not there yet, with the same loader
 * as the original. Idempotent, so it runs on every open: a snapshot written before this existed
 * gains the program on its next start, and a snapshot that has it is left alone.
 */
export function serveNewMemoProgram(svm: LiteSvm): void {
  const target = decodeBase58(MEMO_NEW_PROGRAM) as Uint8Array;
  if (svm.getAccount(target)?.executable()) return;
  const original = svm.getAccount(decodeBase58(MEMO_V2_PROGRAM) as Uint8Array);
  if (!original?.executable())
    throw new Error(`LiteSVM did not preload the Memo v2 program ${MEMO_V2_PROGRAM}`);
  svm.addProgramWithLoader(target, original.data(), original.owner());
}
