import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { IdempotencyRepository } from '../../store/store.ts';

/** The x402 extension (specs/extensions/payment_identifier.md). */
export const PAYMENT_IDENTIFIER = 'payment-identifier';

/** The spec's id: 16 to 128 characters, letters, digits, `-` and `_`. */
const ID_SHAPE = /^[A-Za-z0-9_-]{16,128}$/;
/**
 * A running verify or settle renews its claim every CLAIM_TTL_MS / 3; a claim not renewed that long
 * belongs to a process that died, and a retry takes it over (as the Idempotency-Key plugin does). The
 * settle it then runs is the settlement's own retry: exactly once, whatever the first one did.
 */
const CLAIM_TTL_MS = 10_000;
/** How often a request waits for another with the same identifier to finish. */
const POLL_MS = 100;

/** What a payload's payment-identifier extension says. */
export type Identifier =
  | { readonly kind: 'none' }
  | { readonly kind: 'id'; readonly id: string }
  | { readonly kind: 'invalid'; readonly message: string };

/** The facilitator operation an identifier's answer is kept for: a verify and a settle are two answers. */
export type IdentifiedOperation = 'verify' | 'settle';

/** What running an operation produced, and whether it is final (kept for the identifier) or not. */
export interface OperationAnswer<T> {
  readonly body: T;
  /** False for an answer that may change when asked again (`settlement_pending`): nothing is kept. */
  readonly final: boolean;
}

export type IdentifiedOutcome<T> =
  /** This request's own answer. */
  | { readonly kind: 'answered'; readonly body: T }
  /** The first answer given to this identifier and payload, as JSON text. */
  | { readonly kind: 'replayed'; readonly body: string }
  /** The identifier was given with another payload or requirements: refused, 409. */
  | { readonly kind: 'conflict' }
  /** A request with the identifier is still running after `waitMs`: refused, 409, try again. */
  | { readonly kind: 'busy' }
  /** The payload cannot be put in canonical form (it nests past the stack): nothing was run. */
  | { readonly kind: 'unreadable' };

/**
 * Reads the payload's `payment-identifier` extension: `none` when absent or when it states no id and
 * requires none, `invalid` when the id breaks the spec's shape or the seller required one and the buyer
 * gave none.
 */
export function identifierOf(paymentPayload: unknown): Identifier {
  const extensions = field(paymentPayload, 'extensions');
  const extension = field(extensions, PAYMENT_IDENTIFIER);
  if (extension === undefined) return { kind: 'none' };
  const info = field(extension, 'info');
  if (typeof info !== 'object' || info === null)
    return { kind: 'invalid', message: `extensions.${PAYMENT_IDENTIFIER}.info must be an object` };
  const id = field(info, 'id');
  if (id === undefined) {
    return field(info, 'required') === true
      ? {
          kind: 'invalid',
          message: `the seller requires a payment identifier (extensions.${PAYMENT_IDENTIFIER}.info.required) and the payload carries no id`,
        }
      : { kind: 'none' };
  }
  if (typeof id !== 'string' || !ID_SHAPE.test(id))
    return {
      kind: 'invalid',
      message: `extensions.${PAYMENT_IDENTIFIER}.info.id must be 16 to 128 letters, digits, '-' or '_'`,
    };
  return { kind: 'id', id };
}

/**
 * The payment-identifier extension on /facilitator/verify and /settle, kept in the gateway's
 * idempotency store (the Idempotency-Key table: per account, shared by every instance on PostgreSQL,
 * kept 24 hours): the same identifier with the same payload and requirements answers what the first
 * request answered; with another payload or requirements it is refused (the spec's 409 Conflict),
 * without running anything. A verify and a settle keep one answer each under the same identifier (a
 * stock seller verifies, then settles, the same payload). Two accounts' identifiers never meet.
 *
 * It only replays answers: the settle it lets run is the facilitator's own, exactly once per payload
 * whatever identifiers say — a second identifier for a settled payload is answered
 * `duplicate_settlement`. An answer that is not final (`settlement_pending`) and an error (a fee budget
 * spent, a chain down) leave the identifier free, so a retry looks again.
 */
export class PaymentIdentifiers {
  constructor(
    private readonly deps: {
      readonly idempotency: IdempotencyRepository;
      /** How long a request waits for another with its identifier before answering busy. */
      readonly waitMs: number;
      readonly now: () => number;
    },
  ) {}

  async run<T>(
    accountId: string,
    operation: IdentifiedOperation,
    id: string,
    request: { readonly paymentPayload: unknown; readonly paymentRequirements: unknown },
    work: () => Promise<OperationAnswer<T>>,
  ): Promise<IdentifiedOutcome<T>> {
    const { idempotency, now } = this.deps;
    // A space cannot occur in an Idempotency-Key header (printable characters without it): the two
    // kinds of key never meet in the shared table.
    const key = `x402 ${operation} ${id}`;
    let hash: string;
    try {
      hash = requestHash(request);
    } catch {
      return { kind: 'unreadable' };
    }
    const deadline = now() + this.deps.waitMs;
    for (;;) {
      const at = now();
      const claim = await idempotency.claim(accountId, key, hash, at, at + CLAIM_TTL_MS);
      if (claim.state === 'mismatch') return { kind: 'conflict' };
      if (claim.state === 'completed') return { kind: 'replayed', body: claim.body };
      if (claim.state === 'claimed') break;
      if (now() >= deadline) return { kind: 'busy' };
      await sleep(POLL_MS);
    }
    const heartbeat = setInterval(() => {
      idempotency.extend(accountId, key, now() + CLAIM_TTL_MS).catch(() => {});
    }, CLAIM_TTL_MS / 3).unref();
    let answer: OperationAnswer<T>;
    try {
      answer = await work();
    } catch (error) {
      clearInterval(heartbeat);
      await idempotency.release(accountId, key).catch(() => {});
      throw error;
    }
    clearInterval(heartbeat);
    // The work is done and this is its answer: failing to keep it must not turn it into an error. The
    // claim then lapses and a retry runs again, which the settlement itself answers exactly once.
    await (answer.final
      ? idempotency.complete(accountId, key, 200, JSON.stringify(answer.body))
      : idempotency.release(accountId, key)
    ).catch(() => {});
    return { kind: 'answered', body: answer.body };
  }
}

/**
 * What makes two requests "the same payload": the payload and the requirements it is checked against,
 * in a canonical form (object keys sorted), so a client that orders its JSON differently on a retry is
 * still the same request. The requirements count: a first answer for one set of terms is never replayed
 * for others.
 */
function requestHash(request: {
  readonly paymentPayload: unknown;
  readonly paymentRequirements: unknown;
}): string {
  return createHash('sha256')
    .update(canonical(request.paymentPayload))
    .update('\n')
    .update(canonical(request.paymentRequirements))
    .digest('hex');
}

function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)[name]
    : undefined;
}
