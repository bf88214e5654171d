import type { EventRecord } from '../domain/records/event-records.ts';

/**
 * What a stream subscriber and a webhook endpoint receive for one outbox event (spec §6: a JSON
 * object with at least `amount`): `amount` at the top level, in the same form the REST API answers
 * (a JSON number in the payment's currency), and `data` = the payment as GET /payment/status shows
 * it (spec §2.1), as it was when the event was written.
 */
export interface PaymentEventMessage {
  readonly id: string;
  readonly type: string;
  readonly createdAt: number;
  readonly amount: number;
  readonly data: Readonly<Record<string, unknown>>;
}

export function paymentEventMessage(event: EventRecord): PaymentEventMessage {
  const amount = event.data.amount;
  return {
    id: event.id,
    type: event.type,
    createdAt: event.createdAt,
    amount: typeof amount === 'number' ? amount : Number(amount),
    data: event.data,
  };
}
