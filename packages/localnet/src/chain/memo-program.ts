// The Memo program (MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr), run by the localnet itself.
//
// Why: LiteSVM 1.5's bundled Memo binary does not load — every instruction for it is refused with
// InvalidProgramForExecution, and even redeploying a working memo binary at that address fails —
// yet gate402 payments and the x402 `exact` scheme put a memo in their transfers. So the localnet
// checks each memo instruction the way the program does (the data is UTF-8 text; every account passed
// to it has signed the transaction) and hands LiteSVM the same transaction without those instructions.
// The rewritten message no longer matches the signatures, so they are verified here first and LiteSVM's
// own check is switched off for that one transaction. The ledger keeps the original bytes.
import { createPublicKey, verify } from 'node:crypto';
import { rawKey, rawKeyOf } from '../wire/raw-key.ts';
import type { WireTransaction } from '../wire/wire-transaction.ts';
import type { TransactionErrorJson } from './transaction-error.ts';

export const MEMO_PROGRAM = 'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr';
const MEMO_KEY = rawKeyOf(MEMO_PROGRAM);
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const utf8 = new TextDecoder('utf-8', { fatal: true });

export type MemoOutcome =
  /** No memo instruction: run the transaction as it is. */
  | { readonly kind: 'none' }
  /** A memo instruction (or a signature) fails: the transaction does not run. */
  | { readonly kind: 'rejected'; readonly err: TransactionErrorJson; readonly logs: readonly string[] }
  /**
   * The memos passed: run `bytes` (the transaction without them) with signature checks off.
   * `originalIndex[i]` is the index in the original transaction of instruction i of `bytes`.
   */
  | {
      readonly kind: 'stripped';
      readonly bytes: Uint8Array;
      readonly originalIndex: readonly number[];
      readonly logs: readonly string[];
    };

export function runMemoInstructions(tx: WireTransaction, verifySignatures: boolean): MemoOutcome {
  const memoIndexes = tx.instructions.flatMap((ix, i) => {
    const program = tx.staticKeys[ix.programIdIndex];
    return program !== undefined && rawKey(program) === MEMO_KEY ? [i] : [];
  });
  if (memoIndexes.length === 0) return { kind: 'none' };
  if (verifySignatures && !signaturesValid(tx))
    return { kind: 'rejected', err: 'SignatureFailure', logs: [] };

  const logs: string[] = [];
  for (const index of memoIndexes) {
    const ix = tx.instructions[index];
    if (ix === undefined) continue;
    logs.push(`Program ${MEMO_PROGRAM} invoke [1]`);
    const unsigned = [...ix.accounts].find((account) => account >= tx.header.numRequiredSignatures);
    if (unsigned !== undefined) {
      logs.push(
        'Program log: Missing required signature',
        `Program ${MEMO_PROGRAM} failed: missing required signature for instruction`,
      );
      return { kind: 'rejected', err: { InstructionError: [index, 'MissingRequiredSignature'] }, logs };
    }
    let text: string;
    try {
      text = utf8.decode(ix.data);
    } catch {
      logs.push('Program log: Invalid UTF-8', `Program ${MEMO_PROGRAM} failed: invalid instruction data`);
      return { kind: 'rejected', err: { InstructionError: [index, 'InvalidInstructionData'] }, logs };
    }
    logs.push(
      `Program log: Memo (len ${ix.data.length}): ${JSON.stringify(text)}`,
      `Program ${MEMO_PROGRAM} success`,
    );
  }
  const originalIndex = tx.instructions.flatMap((_, i) => (memoIndexes.includes(i) ? [] : [i]));
  return { kind: 'stripped', bytes: encodeWithout(tx, new Set(memoIndexes)), originalIndex, logs };
}

/** Every required signature verifies against the message (what LiteSVM would otherwise check). */
function signaturesValid(tx: WireTransaction): boolean {
  const message = messageBytes(tx);
  for (let i = 0; i < tx.header.numRequiredSignatures; i++) {
    const signature = tx.signatures[i];
    const signer = tx.staticKeys[i];
    if (signature === undefined || signer === undefined) return false;
    const key = createPublicKey({
      key: Buffer.concat([ED25519_SPKI_PREFIX, signer]),
      format: 'der',
      type: 'spki',
    });
    if (!verify(null, message, key, signature)) return false;
  }
  return true;
}

function messageBytes(tx: WireTransaction): Uint8Array {
  return tx.bytes.subarray(shortVecLength(tx.signatures.length) + 64 * tx.signatures.length);
}

/** The same transaction (signatures, header, keys, blockhash, lookups) without the skipped instructions. */
function encodeWithout(tx: WireTransaction, skip: ReadonlySet<number>): Uint8Array {
  const out: number[] = [];
  const push = (bytes: Uint8Array | readonly number[]) => {
    for (const b of bytes) out.push(b);
  };
  push(shortVec(tx.signatures.length));
  for (const signature of tx.signatures) push(signature);
  if (tx.version === 0) out.push(0x80);
  out.push(
    tx.header.numRequiredSignatures,
    tx.header.numReadonlySignedAccounts,
    tx.header.numReadonlyUnsignedAccounts,
  );
  push(shortVec(tx.staticKeys.length));
  for (const key of tx.staticKeys) push(key);
  push(tx.recentBlockhash);
  const kept = tx.instructions.filter((_, i) => !skip.has(i));
  push(shortVec(kept.length));
  for (const ix of kept) {
    out.push(ix.programIdIndex);
    push(shortVec(ix.accounts.length));
    push(ix.accounts);
    push(shortVec(ix.data.length));
    push(ix.data);
  }
  if (tx.version === 0) {
    push(shortVec(tx.lookups.length));
    for (const lookup of tx.lookups) {
      push(lookup.accountKey);
      push(shortVec(lookup.writableIndexes.length));
      push(lookup.writableIndexes);
      push(shortVec(lookup.readonlyIndexes.length));
      push(lookup.readonlyIndexes);
    }
  }
  return Uint8Array.from(out);
}

function shortVec(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  for (;;) {
    const byte = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

function shortVecLength(value: number): number {
  return shortVec(value).length;
}
