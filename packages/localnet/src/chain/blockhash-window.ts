// The recent blockhashes a transaction may name: a blockhash made at block height h stays valid
// while the current block height is at most h + 150 (Agave's MAX_PROCESSING_AGE), which is the
// `lastValidBlockHeight` that getLatestBlockhash reports. LiteSVM keeps a single blockhash, so the
// chain runs its blockhash check against this window instead.
import { rawKey } from '../wire/raw-key.ts';

export const MAX_PROCESSING_AGE = 150;

export class BlockhashWindow {
  // Keyed by raw bytes: the check runs for every transaction.
  private readonly heightOfHash = new Map<string, number>();
  private readonly order: string[] = [];

  push(hash: Uint8Array, blockHeight: number): void {
    const key = rawKey(hash);
    this.heightOfHash.set(key, blockHeight);
    this.order.push(key);
    while (this.order.length > MAX_PROCESSING_AGE + 1) {
      const oldest = this.order.shift();
      if (oldest !== undefined) this.heightOfHash.delete(oldest);
    }
  }

  /** Whether a transaction naming `hash` may still be processed at `currentHeight`. */
  isValid(hash: Uint8Array, currentHeight: number): boolean {
    const height = this.heightOfHash.get(rawKey(hash));
    return height !== undefined && currentHeight <= height + MAX_PROCESSING_AGE;
  }
}
