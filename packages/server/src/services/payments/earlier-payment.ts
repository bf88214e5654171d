import { GatewayError } from '../../domain/gateway-error.ts';
import type { PaymentRecord } from '../../domain/records/payment-records.ts';
import type { Store } from '../../store/store.ts';

/**
 * The payment an earlier spending request with this Idempotency-Key made (sent, in `mode`), for a retry
 * to answer instead of paying again; undefined when there is none. A key is unique per account across every payment (the store's
 * index), so a payment of another kind under the key (a send's key reused for an x402 payment, after the
 * HTTP layer forgot the first answer) is IDEMPOTENCY_KEY_REUSED: answering it would describe another
 * request, and paying would fail on the index after signing.
 */
export async function earlierPayment(
  store: Pick<Store, 'payments'>,
  accountId: string,
  idempotencyKey: string | undefined,
  mode: PaymentRecord['mode'],
): Promise<PaymentRecord | undefined> {
  if (idempotencyKey === undefined) return undefined;
  const earlier = await store.payments.findByIdempotencyKey(accountId, idempotencyKey);
  if (earlier === undefined || (earlier.direction === 'sent' && earlier.mode === mode)) return earlier;
  throw new GatewayError('IDEMPOTENCY_KEY_REUSED', {
    message: `This Idempotency-Key was used for another kind of payment (${earlier.direction}, ${earlier.mode}); use a new key.`,
    details: { 'Idempotency-Key': 'was used with another request' },
  });
}
