import type { PaymentRecord } from '../../../domain/records/payment-records.ts';

/**
 * What a custodial wallet's one Permit2 approval of a token (Permit2ApprovalService) is recorded as: a
 * `sent` payment (the wallet sent the transaction) of 0 in the native currency to the token contract,
 * whose only cost is its network fee. Its metadata says so in the spec's own words (§2.1: metadata holds
 * a `description`), and names the token: `{description, permit2Approval: {token, symbol}}`; status and
 * webhooks add `permit2Approval.fee`, what the gas cost in the native currency.
 */
export function permit2ApprovalMetadata(token: { address: string; symbol: string }): Record<string, unknown> {
  return {
    description: `Permit2 approval of ${token.symbol} (one-time): lets this wallet's x402 Permit2 payments move ${token.symbol}, each only with a permit the gateway signs. Nothing was paid to anyone; its cost is the network fee (permit2Approval.fee).`,
    permit2Approval: { token: token.address, symbol: token.symbol },
  };
}

/**
 * Whether `payment` is such an approval. Judged from the record, not from its metadata alone (a caller
 * writes the metadata of its own payments): a custodial `sent` payment of 0 in the native currency to
 * the token its metadata names, which no payment request can make (a send is at least 0.001).
 */
export function isPermit2Approval(payment: PaymentRecord): boolean {
  const approval = payment.metadata?.permit2Approval as { token?: unknown } | undefined;
  return (
    payment.mode === 'custodial' &&
    payment.direction === 'sent' &&
    payment.amount === 0n &&
    payment.asset === undefined &&
    typeof approval?.token === 'string' &&
    approval.token === payment.recipient
  );
}
