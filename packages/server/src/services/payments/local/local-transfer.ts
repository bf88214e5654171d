import { canonicalAddress } from '../../../chains/canonical-address.ts';
import type { ChainAdapter, ChainTransaction } from '../../../chains/chain-adapter.ts';

/** What a local-mode transaction was built to do; a landed transaction counts only if it does exactly this. */
export interface BuiltTransfer {
  /** The read-only account the transaction was built with; the chain indexes transactions by it. */
  readonly reference: string;
  /** Fee payer and sender. */
  readonly payer: string;
  readonly recipient: string;
  /** Atomic units: exactly what was built, paid from payer to recipient. */
  readonly amount: bigint;
  /** The token it moves (mint or contract); null: the native currency. */
  readonly asset: string | null;
  /** The memo the transaction carries (the paymentId). */
  readonly memo: string;
  /** The lastValidBlockHeight it was built with, when known: narrows the search on chains that scan. */
  readonly lastValidBlockHeight?: bigint | null;
}

/** At most this many transactions mentioning one reference are looked at: a reference is fresh per build. */
const MAX_CANDIDATES = 20;

/**
 * The landed transaction that does what `built` describes, found by its reference. Anyone can send a
 * transaction naming a reference, so each candidate is checked: fee payer, transfer, recipient, exact
 * amount and memo. A tampered copy (another amount or recipient, the same reference) never matches.
 * A successful match wins over a failed one; undefined when none has landed (at `confirmed`).
 */
export async function findBuiltTransfer(
  chain: ChainAdapter,
  built: BuiltTransfer,
): Promise<ChainTransaction | undefined> {
  return findMatching(chain, built, (tx) => doesTransfer(tx, built));
}

/** A seller's receipt: a memo transaction paid by `payer`, carrying `memo`, found by `reference`. */
export interface BuiltReceipt {
  readonly reference: string;
  readonly payer: string;
  readonly memo: string;
  readonly lastValidBlockHeight?: bigint | null;
}

export async function findBuiltReceipt(
  chain: ChainAdapter,
  built: BuiltReceipt,
): Promise<ChainTransaction | undefined> {
  return findMatching(
    chain,
    built,
    (tx) => sameAddress(tx.feePayer, built.payer) && tx.memos.includes(built.memo),
  );
}

/** The memo a receipt carries: names the seller's payment and the buyer's payment it accepts. */
export function receiptMemo(receiptPaymentId: string, acceptedPaymentId: string): string {
  return `gate402 receipt ${receiptPaymentId} accepts ${acceptedPaymentId}`;
}

function doesTransfer(tx: ChainTransaction, built: BuiltTransfer): boolean {
  if (!sameAddress(tx.feePayer, built.payer) || !tx.memos.includes(built.memo)) return false;
  const { asset } = built;
  const transfers =
    asset === null ? tx.nativeTransfers : tx.tokenTransfers.filter((t) => sameAddress(t.token, asset));
  const paid = transfers
    .filter((t) => sameAddress(t.from, built.payer) && sameAddress(t.to, built.recipient))
    .reduce((sum, t) => sum + t.amount, 0n);
  return paid === built.amount;
}

/** EVM addresses name one account in any letter case; the chain reports them checksummed. */
function sameAddress(a: string, b: string): boolean {
  return canonicalAddress(a) === canonicalAddress(b);
}

async function findMatching(
  chain: ChainAdapter,
  built: { readonly reference: string; readonly lastValidBlockHeight?: bigint | null },
  matches: (tx: ChainTransaction) => boolean,
): Promise<ChainTransaction | undefined> {
  const { reference } = built;
  const found = await chain.findSignatures(reference, {
    limit: MAX_CANDIDATES,
    preparedFor: built.lastValidBlockHeight ?? null,
  });
  let failed: ChainTransaction | undefined;
  // Oldest first: of two valid ones, the first to land is the payment.
  for (const candidate of [...found].reverse()) {
    const tx = await chain.getTransaction(candidate.signature);
    if (tx === undefined || !tx.accounts.some((a) => sameAddress(a, reference)) || !matches(tx)) continue;
    if (tx.error === null) return tx;
    failed ??= tx;
  }
  return failed;
}
