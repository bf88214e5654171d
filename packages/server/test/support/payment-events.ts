import { newId } from '../../src/domain/ids.ts';
import type { EventType } from '../../src/domain/payment-status.ts';
import type { PaymentRecord } from '../../src/domain/records/payment-records.ts';
import { newPayment } from '../../src/services/payments/new-payment.ts';
import type { PaymentLedger } from '../../src/services/payments/payment-ledger.ts';

/**
 * Payments recorded through the real ledger, which writes the payment and its outbox event in one
 * transaction exactly as the payment flows do; for event tests that need many events quickly and do
 * not test the chain. (One stream test also pays through a real localnet.)
 */
export async function recordReceived(
  ledger: PaymentLedger,
  accountId: string,
  input: { wallet?: string; sender?: string; amount?: bigint; metadata?: Record<string, unknown> } = {},
): Promise<PaymentRecord> {
  const wallet = input.wallet ?? 'WalletOfTheAccount1111111111111111111111111';
  const payment = newPayment(Date.now(), {
    id: newId('pay'),
    accountId,
    direction: 'received',
    mode: 'custodial',
    status: 'submitted',
    network: 'solana:test',
    walletAddress: wallet,
    sender: input.sender ?? 'SomePayer111111111111111111111111111111111',
    recipient: wallet,
    amount: input.amount ?? 1_500_000_000n,
    ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
  });
  await ledger.record(payment, { event: 'payment.received' satisfies EventType });
  return payment;
}
