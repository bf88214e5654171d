/** Whole units as decimal text, smallest and largest, by asset symbol or token address (SEND_AMOUNT_BOUNDS). */
export type SendAmountBoundsTable = Readonly<Record<string, readonly [string, string]>>;

/**
 * The spec's bounds of a send (§4.1, §8: 0.001 to 100) for the native currencies, and for USDC from a
 * tenth of a cent to 100,000 dollars. The operator's SEND_AMOUNT_BOUNDS is laid over this table.
 */
export const DEFAULT_SEND_AMOUNT_BOUNDS: SendAmountBoundsTable = {
  SOL: ['0.001', '100'],
  ETH: ['0.001', '100'],
  USDC: ['0.001', '100000'],
};
