import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, invalidParameters } from '../../domain/gateway-error.ts';
import type { Store } from '../../store/store.ts';
import { callerOf } from './authentication.ts';

/** Keys are kept this long (at least the 24 hours payment users expect). */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;
/**
 * A running request renews its claim every CLAIM_TTL_MS / 3; a claim not renewed for CLAIM_TTL_MS
 * belongs to a process that died, and a retry may take it over (the payment services then find the
 * payment the dead request stored, by its key, instead of making another).
 */
const CLAIM_TTL_MS = 10_000;
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** POST routes that move money honour the Idempotency-Key header. */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    idempotencyKey?: string | undefined;
    idempotencyHeartbeat?: NodeJS.Timeout;
    /**
     * Set by a handler whose answer is not final — an x402 settle still `settlement_pending`: the key is
     * left free, as on a 503, so a retry with it asks again instead of being replayed "pending" for 24 h.
     */
    idempotencyUnfinished?: boolean;
  }
}

/**
 * Idempotency-Key on routes marked `idempotent` (Stripe semantics): the same key with the same body
 * answers what the first request answered; the same key with another body is 422
 * IDEMPOTENCY_KEY_REUSED; while the first is still running, 409 IDEMPOTENCY_KEY_IN_USE. Keys are
 * scoped to the account. Answers are stored whatever they were, errors included, so a retry never
 * does twice what the first attempt did; only a refusal before the handler ran (auth, rate limit,
 * validation), a 503 (a dependency down, nothing done), a 429 (a quota such as the x402 fee budget,
 * nothing done) or an answer its handler marks unfinished
 * (`idempotencyUnfinished`: asked again, it repeats nothing) leaves the key free.
 */
export function installIdempotency(app: FastifyInstance, store: Store, now: () => number = Date.now): void {
  // Part of every request's shape, as `caller` is (see installAuthentication).
  app.decorateRequest('idempotencyKey', undefined);
  app.decorateRequest('idempotencyHeartbeat', undefined);
  app.decorateRequest('idempotencyUnfinished', false);
  const claimKey = async (request: FastifyRequest, reply: FastifyReply) => {
    const key = request.headers['idempotency-key'];
    if (key === undefined) return;
    if (typeof key !== 'string' || !KEY_SHAPE.test(key)) {
      throw invalidParameters({ 'Idempotency-Key': 'must be 1 to 255 printable characters' });
    }
    const { account } = callerOf(request);
    const at = now();
    const claim = await store.idempotency.claim(account.id, key, requestHash(request), at, at + CLAIM_TTL_MS);
    switch (claim.state) {
      case 'claimed':
        request.idempotencyKey = key;
        request.idempotencyHeartbeat = setInterval(() => {
          store.idempotency.extend(account.id, key, now() + CLAIM_TTL_MS).catch(() => {});
        }, CLAIM_TTL_MS / 3).unref();
        return;
      case 'in_progress':
        throw new GatewayError('IDEMPOTENCY_KEY_IN_USE', { retryAfter: 1 });
      case 'mismatch':
        throw new GatewayError('IDEMPOTENCY_KEY_REUSED', {
          details: { 'Idempotency-Key': 'was used with another request' },
        });
      case 'completed':
        return replay(reply, claim.status, claim.body);
    }
  };
  const stopHeartbeat = async (request: FastifyRequest) => {
    clearInterval(request.idempotencyHeartbeat);
  };
  const storeAnswer = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    clearInterval(request.idempotencyHeartbeat);
    const key = request.idempotencyKey;
    if (key !== undefined && request.caller !== undefined) {
      // Once: this hook runs again for the error answer should it throw.
      request.idempotencyKey = undefined;
      try {
        // A 429 a handler answers (FEE_BUDGET_EXCEEDED) is a quota of the moment too: nothing was done.
        if (reply.statusCode === 503 || reply.statusCode === 429 || request.idempotencyUnfinished === true) {
          // A dependency (the chain, Redis) was down: nothing a retry could repeat was done — a send
          // that stored its payment answers it as pending instead — so the key stays free for the retry
          // the 503 asks for, rather than replaying the outage for 24 hours. Likewise an unfinished
          // answer: the retry looks again at what the first started, and gets its final answer.
          await store.idempotency.release(request.caller.account.id, key);
        } else {
          await store.idempotency.complete(request.caller.account.id, key, reply.statusCode, String(payload));
        }
      } catch (error) {
        // The work is done and this is its answer: the caller gets it. The key keeps a claim without an
        // answer, which lapses (CLAIM_TTL_MS); a retry then finds the payment the request recorded by its
        // key, as after a crash. Failing here instead answered 500 and stored that 500 as the key's answer.
        request.log.error({ err: error }, 'could not store the answer of an Idempotency-Key');
      }
    }
    return payload;
  };
  // Only routes that move money carry the hooks; every other route pays nothing for them.
  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotent) return;
    route.preHandler = [...toArray(route.preHandler), claimKey];
    route.onSend = [...toArray(route.onSend), storeAnswer];
    route.onRequestAbort = [...toArray(route.onRequestAbort), stopHeartbeat];
  });
}

function toArray<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

function replay(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).header('idempotent-replayed', 'true').type('application/json').send(body);
}

function requestHash(request: FastifyRequest): string {
  let body: string;
  try {
    body = JSON.stringify(request.body ?? null);
  } catch {
    // Parsed JSON serialises again unless it nests thousands of levels deep (metadata), past the stack.
    throw invalidParameters(
      { body: 'must not nest thousands of levels deep' },
      'The request body nests too deeply.',
    );
  }
  return createHash('sha256')
    .update(
      `${request.method} ${request.routeOptions.url ?? request.url}\n${JSON.stringify(request.params)}\n`,
    )
    .update(body)
    .digest('hex');
}
