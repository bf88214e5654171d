import { Gate402Error, Gate402TransportError } from '@gate402/client';
import { OutboundUrlError } from '../outbound/ssrf-guard.ts';

/**
 * What a failed tool call tells the agent: a stable code (the gateway's error code when the gateway
 * refused, or one of the tool's own: PAYMENT_DECLINED, TIMEOUT, FETCH_FAILED, GATEWAY_UNREACHABLE), a
 * message for people, the fields at fault, and the payment when one was made before the failure.
 * Never a stack trace, never the API key.
 */
export interface ToolFailure {
  readonly code: string;
  readonly message: string;
  readonly details?: Readonly<Record<string, string>>;
  readonly retryAfter?: number;
  /** Set when money moved before the failure: the agent must not assume nothing was paid. */
  readonly payment?: unknown;
}

/** A refusal a tool decided itself. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  constructor(
    readonly code: string,
    message: string,
    readonly details?: Readonly<Record<string, string>>,
    readonly payment?: unknown,
  ) {
    super(message);
  }
}

/** The failure an agent is shown for `error`; anything unforeseen is a bare INTERNAL_ERROR (and logged by the caller). */
export function toToolFailure(error: unknown): ToolFailure & { readonly unforeseen: boolean } {
  if (error instanceof ToolError) {
    return {
      code: error.code,
      message: error.message,
      ...(error.details === undefined ? {} : { details: error.details }),
      ...(error.payment === undefined || error.payment === null ? {} : { payment: error.payment }),
      unforeseen: false,
    };
  }
  if (error instanceof Gate402Error) {
    return {
      code: error.code,
      message: error.message,
      ...(error.details === undefined ? {} : { details: error.details }),
      ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }),
      unforeseen: false,
    };
  }
  if (error instanceof Gate402TransportError) {
    return {
      code: 'GATEWAY_UNREACHABLE',
      message: `The gateway did not answer${error.status === undefined ? '' : ` usably (HTTP ${error.status})`}; retry later. A payment under way may still have been made: list_payments shows it.`,
      unforeseen: false,
    };
  }
  if (error instanceof OutboundUrlError) {
    return {
      code: 'INVALID_PARAMETERS',
      message: `The URL is not allowed: it ${error.reason}.`,
      details: { url: error.reason },
      unforeseen: false,
    };
  }
  if (
    error instanceof TypeError &&
    /fetch failed|redirects|invalid url|failed to parse url/i.test(error.message)
  ) {
    // undici's "fetch failed" hides the reason in its cause: a refused connection, a DNS failure, …
    const cause = (error.cause as { code?: unknown } | undefined)?.code;
    return {
      code: 'FETCH_FAILED',
      message: `The URL could not be fetched: ${error.message}${typeof cause === 'string' ? ` (${cause})` : ''}.`,
      unforeseen: false,
    };
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^(E[A-Z]+|ERR_[A-Z_]+)$/.test(code) && code !== 'ERR_INVALID_ARG_TYPE') {
    // A socket's failure (ECONNREFUSED, ECONNRESET, ENOTFOUND, ERR_TLS_…): the seller, not the gateway.
    return { code: 'FETCH_FAILED', message: `The URL could not be fetched (${code}).`, unforeseen: false };
  }
  return { code: 'INTERNAL_ERROR', message: 'The tool failed unexpectedly; retry later.', unforeseen: true };
}
