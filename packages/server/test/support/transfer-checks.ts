import assert from 'node:assert/strict';

/** Balances in atomic units (lamports, wei), as a chain adapter or anvil reads them. */
type BalanceOf = (address: string) => Promise<bigint>;

/**
 * The money check of one payment on any chain: the recipient (whose balance was `recipientBefore`)
 * got exactly `amount`, and the payer (at `payerBefore`) lost exactly `amount` plus `fee`.
 */
export async function assertTransferred(
  balanceOf: BalanceOf,
  transfer: {
    readonly payer: string;
    readonly payerBefore: bigint;
    readonly recipient: string;
    readonly recipientBefore?: bigint;
    readonly amount: bigint;
    readonly fee: bigint;
    /** How the fee was counted, for the failure message. */
    readonly feeIs: string;
  },
): Promise<void> {
  assert.equal(
    await balanceOf(transfer.recipient),
    (transfer.recipientBefore ?? 0n) + transfer.amount,
    'the recipient gets exactly the amount',
  );
  assert.equal(
    await balanceOf(transfer.payer),
    transfer.payerBefore - transfer.amount - transfer.fee,
    `the sender pays the amount and ${transfer.feeIs}`,
  );
}
