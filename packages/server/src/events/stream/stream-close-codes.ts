/**
 * Close codes of the payment stream (documented in the README and the AsyncAPI document). 4xxx codes
 * mirror the HTTP status of the same meaning where there is one.
 */
export const STREAM_CLOSE = {
  /** The server is shutting down; reconnect (to another instance) and resume with `since`. */
  GOING_AWAY: 1001,
  /** A text message of the client that is not valid UTF-8 (ws closes the connection itself). */
  INVALID_UTF8: 1007,
  /** A client message over MAX_STREAM_MESSAGE_BYTES (ws closes the connection itself). */
  MESSAGE_TOO_BIG: 1009,
  /**
   * Missing, invalid or revoked API key, or no `auth` message within 5 seconds; an open connection whose
   * key is revoked is closed with it at the next heartbeat.
   */
  UNAUTHORIZED: 4001,
  /** The account's plan does not include the stream (an open connection: checked at each heartbeat). */
  FORBIDDEN: 4003,
  /** The consumer did not read fast enough: more than STREAM_MAX_BUFFERED_BYTES waited unsent. */
  TOO_SLOW: 4008,
  /**
   * The account is over its rate limit (the connection attempt counts as a request), or already holds
   * STREAM_MAX_CONNECTIONS_PER_ACCOUNT connections on this instance.
   */
  RATE_LIMITED: 4029,
  /** Storage or Redis failed while authenticating; retry shortly. */
  UNAVAILABLE: 4503,
} as const;

/** Client messages are small JSON objects (a subscribe names at most 100 wallets); bigger ones are refused. */
export const MAX_STREAM_MESSAGE_BYTES = 16 * 1024;
