// Signatures that landed in the last MAX_PROCESSING_AGE + 1 slots, kept in memory so the replay
// check on the hot path needs no SQLite read.
//
// Why that window is enough: a transaction only executes while its blockhash is in the window,
// and an earlier landing of the same signature (same message, same blockhash) happened no
// earlier than that blockhash. So while a blockhash is valid, every earlier landing of a
// transaction naming it is in this set; once it is not, the caller falls back to the ledger.
import { rawKey } from '../wire/raw-key.ts';

/** 12 bytes (96 bits) of a signature: collisions are possible only by design, so a hit is a hint. */
const PREFIX_BYTES = 12;

export class RecentSignatures {
  private readonly prefixes = new Set<string>();
  private readonly bySlot = new Map<number, string[]>();

  add(signature: Uint8Array, slot: number): void {
    const prefix = rawKey(signature.subarray(0, PREFIX_BYTES));
    this.prefixes.add(prefix);
    let list = this.bySlot.get(slot);
    if (!list) {
      list = [];
      this.bySlot.set(slot, list);
    }
    list.push(prefix);
  }

  /** False means certainly not landed recently; true must be confirmed against the ledger. */
  mightContain(signature: Uint8Array): boolean {
    return this.prefixes.has(rawKey(signature.subarray(0, PREFIX_BYTES)));
  }

  forgetBefore(slot: number): void {
    for (const [at, list] of this.bySlot) {
      if (at >= slot) continue;
      for (const prefix of list) this.prefixes.delete(prefix);
      this.bySlot.delete(at);
    }
  }

  /** Forgets the signatures landed after `slot` (their slots were dropped). */
  forgetAfter(slot: number): void {
    for (const [at, list] of this.bySlot) {
      if (at <= slot) continue;
      for (const prefix of list) this.prefixes.delete(prefix);
      this.bySlot.delete(at);
    }
  }
}
