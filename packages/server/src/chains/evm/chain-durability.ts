/**
 * What the EVM adapter, the exact scheme and the local faucet need of a chain whose recent blocks a
 * crash of the chain itself could lose: the embedded anvil's journal (`AnvilJournal` of @gate402/anvil,
 * which embedded-evm.ts passes in). A network without one (every real network) passes nothing.
 */
export interface ChainDurability {
  /**
   * Resolves true once block `number` with hash `hash` (and every block before it) is in the journal,
   * durably; false when, after a catch-up that started after the call, the chain no longer has that
   * block (the read that named it saw a block rewound since): the caller reads again.
   */
  syncThrough(number: bigint, hash?: string): Promise<boolean>;
  /** Resolves after a catch-up that started after the call: rewinds seen by then are followed. */
  sync(): Promise<void>;
}
