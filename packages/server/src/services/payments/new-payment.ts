import type { PaymentRecord } from '../../domain/records/payment-records.ts';

/** What every new payment must say; everything else starts empty. */
export type NewPaymentFields = Pick<
  PaymentRecord,
  | 'id'
  | 'accountId'
  | 'direction'
  | 'mode'
  | 'status'
  | 'network'
  | 'walletAddress'
  | 'sender'
  | 'recipient'
  | 'amount'
> &
  Partial<PaymentRecord>;

/** A payment record created at `at`, with every field it does not name empty (null). */
export function newPayment(at: number, fields: NewPaymentFields): PaymentRecord {
  return {
    fee: null,
    resource: null,
    metadata: null,
    signature: null,
    reference: null,
    signedTransaction: null,
    lastValidBlockHeight: null,
    expiresAt: null,
    slot: null,
    blockHeight: null,
    error: null,
    sourcePaymentId: null,
    idempotencyKey: null,
    confirmedAt: null,
    createdAt: at,
    updatedAt: at,
    ...fields,
  };
}
