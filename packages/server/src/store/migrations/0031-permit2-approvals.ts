import type { Kysely, Migration } from 'kysely';

/**
 * Permit2 approvals sent from custodial EVM wallets (#29, POST /payment/x402 paying a Permit2 offer):
 * one row per (network, wallet, token), naming the payment that records the wallet's
 * `approve(Permit2, max)` transaction (its signed bytes, nonce and fee live there). The primary key is
 * what makes the approval once per wallet and token across concurrent requests and gateway instances:
 * a second approver finds the row and waits for that transaction instead of sending another. A row
 * whose approval ended without landing (failed, expired) is taken over by the next one.
 */
export const permit2Approvals: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('permit2_approvals')
      .addColumn('network', 'text', (c) => c.notNull())
      .addColumn('wallet_address', 'text', (c) => c.notNull())
      .addColumn('token', 'text', (c) => c.notNull())
      .addColumn('payment_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('permit2_approvals_pk', ['network', 'wallet_address', 'token'])
      .execute();
  },
};
