import { ERROR_CATALOGUE, type ErrorCode } from './error-catalogue.ts';

/** Per-field problems of a request: field name (dotted path for nested fields) → what is wrong. */
export type ErrorDetails = Readonly<Record<string, string>>;

export interface GatewayErrorOptions {
  readonly message?: string;
  readonly details?: ErrorDetails;
  /** Whole seconds the caller should wait before retrying (rate limits, unavailable dependencies). */
  readonly retryAfter?: number;
  readonly cause?: unknown;
  /** False for an answer that may change when asked again (see GatewayError.final). Default true. */
  readonly final?: boolean;
}

/**
 * An error whose code is in the catalogue and may be shown to the caller as it is.
 * Anything thrown that is not a GatewayError is internal and is answered as INTERNAL_ERROR.
 */
export class GatewayError extends Error {
  override readonly name = 'GatewayError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: ErrorDetails | undefined;
  readonly retryAfter: number | undefined;
  /**
   * Whether this refusal is the request's answer for good. False when the same request asked again may
   * be answered otherwise — an x402 settlement still pending, a facilitator that could not be reached or
   * whose answer was lost: an Idempotency-Key is then left free instead of replaying this answer.
   */
  readonly final: boolean;

  constructor(code: ErrorCode, options: GatewayErrorOptions = {}) {
    const entry = ERROR_CATALOGUE[code];
    super(
      options.message ?? entry.message,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
    this.status = entry.status;
    this.details = options.details;
    this.retryAfter = options.retryAfter;
    this.final = options.final ?? true;
  }
}

/** The error body of spec §7. */
export interface ErrorBody {
  success: false;
  error: {
    code: ErrorCode;
    message: string;
    details?: ErrorDetails;
    retryAfter?: number;
    requestId?: string;
  };
}

export function toErrorBody(error: GatewayError, requestId?: string): ErrorBody {
  const body: ErrorBody = { success: false, error: { code: error.code, message: error.message } };
  if (error.details !== undefined) body.error.details = error.details;
  if (error.retryAfter !== undefined) body.error.retryAfter = error.retryAfter;
  if (requestId !== undefined) body.error.requestId = requestId;
  return body;
}

export function invalidParameters(details: ErrorDetails, message?: string): GatewayError {
  const fields = Object.keys(details);
  return new GatewayError('INVALID_PARAMETERS', {
    message: message ?? `Invalid request parameters: ${fields.join(', ')}.`,
    details,
  });
}
