import assert from 'node:assert/strict';
import type { callAs } from './api-caller.ts';

/** One answer of POST /transaction/receive: its status and parsed body. */
type ReceiveAnswer = Awaited<ReturnType<typeof callAs>>;

interface RepeatedReceive {
  /** One POST /transaction/receive of the payload; every call sends the same request. */
  readonly receive: () => Promise<ReceiveAnswer>;
  /** The body fields that make two answers the same receipt. */
  readonly receiptFields: readonly string[];
}

/**
 * Asks for a local receipt of one x402 payload three times, the first two at the same instant (as a
 * retrying client does), and asserts that all three answer the same receipt, compared on
 * `receiptFields`. Given `receiptsRecorded` (the seller's count of payments), it also asserts that the
 * three asks recorded exactly one payment: a second would show the seller twice what the buyer pays once.
 *
 * Returns the first answer, whose transaction the test goes on to sign and broadcast, and the count of
 * payments recorded before the asks, for the test's later checks.
 *
 * @example
 * const { receipt, recordedBefore } = await oneReceiptPerPayload({
 *   receive: () => api('POST', '/transaction/receive', body),
 *   receiptFields: ['paymentId', 'transaction', 'expiresAt', 'lastValidBlockHeight'],
 *   receiptsRecorded: async () => (await api('GET', `/payment/history/${wallet}`)).body.total,
 * });
 */
export async function oneReceiptPerPayload(
  ask: RepeatedReceive & { readonly receiptsRecorded: () => Promise<number> },
): Promise<{ receipt: ReceiveAnswer; recordedBefore: number }>;
export async function oneReceiptPerPayload(ask: RepeatedReceive): Promise<{ receipt: ReceiveAnswer }>;
export async function oneReceiptPerPayload(
  ask: RepeatedReceive & { readonly receiptsRecorded?: () => Promise<number> },
): Promise<{ receipt: ReceiveAnswer; recordedBefore?: number }> {
  const recordedBefore = await ask.receiptsRecorded?.();
  const [first, second] = await Promise.all([ask.receive(), ask.receive()]);
  const third = await ask.receive();
  for (const answer of [first, second, third]) assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const receiptOf = (answer: ReceiveAnswer) => ask.receiptFields.map((field) => answer.body[field]);
  assert.deepEqual(receiptOf(second), receiptOf(first));
  assert.deepEqual(receiptOf(third), receiptOf(first));
  if (ask.receiptsRecorded === undefined || recordedBefore === undefined) return { receipt: first };
  assert.equal(await ask.receiptsRecorded(), recordedBefore + 1, 'one receipt recorded');
  return { receipt: first, recordedBefore };
}
