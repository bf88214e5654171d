import { newId } from '../../src/domain/ids.ts';
import type { PaymentRecord } from '../../src/domain/records/payment-records.ts';
import { newPayment } from '../../src/services/payments/new-payment.ts';

/**
 * A payment record made at `at` for tests that need one in storage or a service but not on a chain: a
 * confirmed custodial send on a test network, with every field `overrides` names replaced.
 */
export function aTestPayment(
  at: number,
  accountId: string,
  overrides: Partial<PaymentRecord> = {},
): PaymentRecord {
  return newPayment(at, {
    id: newId('pay'),
    accountId,
    direction: 'sent',
    mode: 'custodial',
    status: 'confirmed',
    network: 'solana:test',
    walletAddress: 'WALLET',
    sender: 'WALLET',
    recipient: 'OTHER',
    amount: 1_000_000n,
    ...overrides,
  });
}
