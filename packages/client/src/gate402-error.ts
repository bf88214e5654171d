import type { components } from './generated/openapi-types.ts';

/** The error body every gateway error answers with (spec §7). */
export type ErrorBody = components['schemas']['ErrorBody'];

/** A code of the gateway's error catalogue (README, "Errors"). */
export type ErrorCode = ErrorBody['error']['code'];

/**
 * The gateway refused a request: its error body as a typed object.
 * Match on `code`, never on `message` (messages are for people and may change).
 */
export class Gate402Error extends Error {
  override readonly name = 'Gate402Error';
  readonly code: ErrorCode;
  /** The HTTP status the gateway answered. */
  readonly status: number;
  /** For INVALID_PARAMETERS and proof errors: field name → the rule it breaks. */
  readonly details: Readonly<Record<string, string>> | undefined;
  /** Seconds to wait before retrying (429, 503). */
  readonly retryAfter: number | undefined;
  /** The gateway's request id; quote it when reporting a problem. */
  readonly requestId: string | undefined;

  constructor(status: number, body: ErrorBody) {
    super(body.error.message);
    this.code = body.error.code;
    this.status = status;
    this.details = body.error.details;
    this.retryAfter = body.error.retryAfter;
    this.requestId = body.error.requestId;
  }
}

/**
 * The gateway could not be reached, timed out, or answered something that is not gate402's JSON
 * (a proxy's error page, say). Nothing is known about whether the request took effect: retry POSTs that
 * move money with the same Idempotency-Key.
 */
export class Gate402TransportError extends Error {
  override readonly name = 'Gate402TransportError';
  /** The HTTP status when an answer arrived; undefined when none did. */
  readonly status: number | undefined;
  /**
   * The Idempotency-Key the request was sent with (the caller's, or one the SDK made for a money call):
   * the same call again with `{idempotencyKey}` set to it answers what the first did, and never pays twice.
   */
  readonly idempotencyKey: string | undefined;

  constructor(
    message: string,
    options: { status?: number; cause?: unknown; idempotencyKey?: string | undefined } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status;
    this.idempotencyKey = options.idempotencyKey;
  }
}

/** True when `error` is a gateway refusal, with one of `codes` when given. */
export function isGate402Error(error: unknown, ...codes: ErrorCode[]): error is Gate402Error {
  return error instanceof Gate402Error && (codes.length === 0 || codes.includes(error.code));
}

export function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const error = (value as { error?: unknown }).error;
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'string' &&
    typeof (error as { message?: unknown }).message === 'string'
  );
}
