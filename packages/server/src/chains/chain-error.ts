/**
 * Why a chain refused a request or could not be asked. Services map kinds to the error catalogue
 * (insufficient_funds → INSUFFICIENT_BALANCE, unavailable → 503, …); the message stays internal.
 */
export type ChainErrorKind =
  | 'insufficient_funds'
  | 'blockhash_expired'
  | 'already_processed'
  | 'invalid_transaction'
  | 'rejected'
  /** The recipient cannot take the transfer: an EVM contract that reverts when paid. */
  | 'recipient_refused'
  | 'unavailable';

export class ChainError extends Error {
  override readonly name = 'ChainError';
  /** For `unavailable`: whole seconds until an endpoint will be tried again, when known. */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    readonly kind: ChainErrorKind,
    message: string,
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.retryAfterSeconds = options?.retryAfterSeconds;
  }
}
