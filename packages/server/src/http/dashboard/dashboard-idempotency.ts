import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { GatewayError } from '../../domain/gateway-error.ts';
import type { Store } from '../../store/store.ts';

/** As the API's Idempotency-Key claims (plugins/idempotency.ts): renewed every third of it while running. */
const CLAIM_TTL_MS = 10_000;

/**
 * Runs `work` once per dashboard idempotency key, as the API's Idempotency-Key header does for API keys
 * (the dashboard sends its key in the body: its requests carry no API key and so skip that plugin).
 * The key is claimed in storage before `work` starts, so of two submits at the same instant, on one
 * instance or two, one runs and the other is answered 409 IDEMPOTENCY_KEY_IN_USE (retry in a second);
 * once the first has answered, the same key and request are answered its stored answer again; the same
 * key with another request is 422 IDEMPOTENCY_KEY_REUSED.
 *
 * A refusal or failure of `work` frees the key rather than being stored: the services behind these
 * routes find what an earlier attempt recorded under the same key (a refund by its payment's key), so
 * asking again repeats nothing that moved money, and a refusal of the moment (a chain down) is not
 * replayed for a day.
 */
export async function onceByDashboardKey(
  store: Store,
  reply: FastifyReply,
  claim: { accountId: string; key: string; request: unknown; now?: () => number },
  work: () => Promise<unknown>,
): Promise<unknown> {
  const now = claim.now ?? Date.now;
  const { accountId, key } = claim;
  const hash = createHash('sha256').update(JSON.stringify(claim.request)).digest('hex');
  const at = now();
  const claimed = await store.idempotency.claim(accountId, key, hash, at, at + CLAIM_TTL_MS);
  switch (claimed.state) {
    case 'in_progress':
      throw new GatewayError('IDEMPOTENCY_KEY_IN_USE', { retryAfter: 1 });
    case 'mismatch':
      throw new GatewayError('IDEMPOTENCY_KEY_REUSED', {
        details: { idempotencyKey: 'was used with another request' },
      });
    case 'completed':
      return reply
        .code(claimed.status)
        .header('idempotent-replayed', 'true')
        .type('application/json')
        .send(claimed.body);
    case 'claimed':
      break;
  }
  const heartbeat = setInterval(() => {
    store.idempotency.extend(accountId, key, now() + CLAIM_TTL_MS).catch(() => {});
  }, CLAIM_TTL_MS / 3).unref();
  let answer: unknown;
  try {
    answer = await work();
  } catch (error) {
    clearInterval(heartbeat);
    await store.idempotency.release(accountId, key).catch(() => {});
    throw error;
  }
  clearInterval(heartbeat);
  // The work is done: its answer goes out even if it cannot be kept; the claim then lapses and a retry
  // finds what the work recorded under the key, as after a crash.
  await store.idempotency.complete(accountId, key, 200, JSON.stringify(answer)).catch((error: unknown) => {
    reply.log.error({ err: error }, 'could not store the answer of a dashboard idempotency key');
  });
  return answer;
}
