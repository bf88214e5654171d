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
  /**
   * The recipient cannot take the transfer: an EVM contract that reverts when paid, or a Solana address
   * that is itself a token account or mint (tokens paid to it could never be moved again).
   */
  | 'recipient_refused'
  | 'unavailable';

export class ChainError extends Error {
  override readonly name = 'ChainError';
  /** For `unavailable`: whole seconds until an endpoint will be tried again, when known. */
  readonly retryAfterSeconds: number | undefined;
  /**
   * For `recipient_refused`: what is wrong with the recipient, in words the caller may read (the
   * message stays internal); absent, the catalogue's default is answered.
   */
  readonly recipientProblem: string | undefined;
  constructor(
    readonly kind: ChainErrorKind,
    message: string,
    options?: { cause?: unknown; retryAfterSeconds?: number; recipientProblem?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.retryAfterSeconds = options?.retryAfterSeconds;
    this.recipientProblem = options?.recipientProblem;
  }
}
