// The recent blockhashes a transaction may name: a blockhash made at block height h stays valid
// while the current block height is at most h + 150 (Agave's MAX_PROCESSING_AGE), which is the
// `lastValidBlockHeight` that getLatestBlockhash reports. LiteSVM keeps a single blockhash, so the
// chain runs its blockhash check against this window instead.
import { rawKey } from '../wire/raw-key.ts';

export const MAX_PROCESSING_AGE = 150;

export class BlockhashWindow {
  // Keyed by raw bytes: the check runs for every transaction.
  private readonly heightOfHash = new Map<string, number>();
  /** Oldest first, with the slot of each block (slot numbers may have gaps: dropped slots). */
  private order: { key: string; slot: number; height: number }[] = [];

  push(hash: Uint8Array, blockHeight: number, slot: number): void {
    const key = rawKey(hash);
    this.heightOfHash.set(key, blockHeight);
    this.order.push({ key, slot, height: blockHeight });
    while (this.order.length > MAX_PROCESSING_AGE + 1) {
      const oldest = this.order.shift();
      if (oldest !== undefined) this.heightOfHash.delete(oldest.key);
    }
  }

  /** The slot of the oldest blockhash still held (undefined when empty). */
  oldestSlot(): number | undefined {
    return this.order[0]?.slot;
  }

  /** Forgets the blockhashes of blocks above `blockHeight` (their slots were dropped). */
  forgetAbove(blockHeight: number): void {
    for (const entry of this.order) if (entry.height > blockHeight) this.heightOfHash.delete(entry.key);
    this.order = this.order.filter((entry) => entry.height <= blockHeight);
  }

  /** Whether a transaction naming `hash` may still be processed at `currentHeight`. */
  isValid(hash: Uint8Array, currentHeight: number): boolean {
    const height = this.heightOfHash.get(rawKey(hash));
    return height !== undefined && currentHeight <= height + MAX_PROCESSING_AGE;
  }
}
