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

const SIGNED_BY_HEADER = 'Program log: Signed by:';
const OLD_MEMO_LENGTH = /^Program log: Memo \(len (\d+)\)$/;
const LOG_PREFIX = 'Program log: ';

/**
 * LiteSVM's Memo ELF is an older build than the one on mainnet, and logs "Signed by:", each signer,
 * "Memo (len N)" and the memo on lines of their own; the program deployed on mainnet logs
 * `Signed by <address>` per signer and `Memo (len N): "<memo>"` (the memo as Rust's `{:?}` writes a
 * str). The logs are rewritten to mainnet's form; every other line is kept as it is.
 */
export function mainnetMemoLogs(logs: readonly string[]): string[] {
  if (!logs.some((line) => line === SIGNED_BY_HEADER || OLD_MEMO_LENGTH.test(line))) return [...logs];
  const out: string[] = [];
  for (let i = 0; i < logs.length; i++) {
    const line = logs[i] as string;
    if (line === SIGNED_BY_HEADER) {
      // Signer lines follow up to the memo's length line.
      let j = i + 1;
      const signers: string[] = [];
      while (
        j < logs.length &&
        !OLD_MEMO_LENGTH.test(logs[j] as string) &&
        (logs[j] as string).startsWith(LOG_PREFIX)
      ) {
        signers.push((logs[j] as string).slice(LOG_PREFIX.length));
        j++;
      }
      for (const signer of signers) out.push(`${LOG_PREFIX}Signed by ${signer}`);
      i = j - 1;
      continue;
    }
    const length = OLD_MEMO_LENGTH.exec(line);
    const text = logs[i + 1];
    if (length && text?.startsWith(LOG_PREFIX)) {
      out.push(`${LOG_PREFIX}Memo (len ${length[1]}): ${rustDebugString(text.slice(LOG_PREFIX.length))}`);
      i++;
      continue;
    }
    out.push(line);
  }
  return out;
}

/** A str as Rust's `{:?}` writes it: quoted, with `"`, `\\` and non-printable characters escaped. */
export function rustDebugString(text: string): string {
  let out = '"';
  for (const ch of text) {
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\0') out += '\\0';
    else if (/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(ch))
      out += `\\u{${(ch.codePointAt(0) as number).toString(16)}}`;
    else out += ch;
  }
  return `${out}"`;
}
