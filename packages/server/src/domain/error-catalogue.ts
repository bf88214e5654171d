/**
 * The one catalogue of error codes gate402 answers with (spec §7), their HTTP status and default message.
 *
 * Codes are stable: never renamed, never reused for another meaning. New codes use the small vocabulary
 * `INVALID_`, `_NOT_FOUND`, `_MISMATCH`, `_EXPIRED`, `_UNAVAILABLE`.
 * Where the spec leaves a status "not shown", the choice made here is documented in the README.
 */
export const ERROR_CATALOGUE = {
  INVALID_PARAMETERS: { status: 400, message: 'Request parameters are invalid.' },
  UNAUTHORIZED: { status: 401, message: 'API key missing or invalid.' },
  FORBIDDEN: { status: 403, message: 'This API key is not allowed to do that.' },
  NOT_FOUND: { status: 404, message: 'Not found.' },
  /**
   * Spend policies (services/spending/): a custodial spend above a cap of the key's or the account's
   * policy, per payment or over the rolling day; `details.limit` names the cap (`maxPerPayment`,
   * `maxPerDay`), `details.policy` whose it is (`key`, `account`), `details.remaining` what is left.
   */
  SPEND_LIMIT_EXCEEDED: { status: 403, message: 'This payment is above a spend limit of the policy.' },
  /**
   * Spend policies: the recipient, the resource's host, the network or the asset is not one the key's or
   * the account's policy allows (`details.limit`: `allowedRecipients`, `allowedHosts`, `allowedNetworks`,
   * `limits`); `allowedHosts` also when the policy lists hosts but not the recipient a request names.
   * Nothing was signed or recorded.
   */
  SPEND_NOT_ALLOWED: { status: 403, message: 'The spend policy does not allow this payment.' },
  /** Spend policies: the policy has expired, so it allows no spend at all until it is set again. */
  SPEND_POLICY_EXPIRED: { status: 403, message: 'The spend policy has expired; it allows no payments.' },
  PAYMENT_NOT_FOUND: { status: 404, message: 'No such payment.' },
  /**
   * The payment is not in a state that allows what was asked (a refund of a payment that is not
   * confirmed or finalized); `details.paymentId` says which state, `details.status` names it.
   */
  INVALID_PAYMENT_STATE: { status: 409, message: 'The payment is not in a state that allows this.' },
  TOKEN_NOT_FOUND: { status: 404, message: 'No token mint or contract at this address.' },
  WALLET_ALREADY_REGISTERED: { status: 409, message: 'This address is already registered.' },
  /** No wallet of the caller's account at this address: none at all, or another account's (not told apart). */
  WALLET_NOT_FOUND: { status: 404, message: 'No such wallet in this account.' },
  INVALID_CHALLENGE: {
    status: 400,
    message: 'This is not a challenge the gateway issued; ask POST /wallets/challenge for one.',
  },
  CHALLENGE_ACCOUNT_MISMATCH: { status: 403, message: 'This challenge was issued to another account.' },
  CHALLENGE_ADDRESS_MISMATCH: { status: 400, message: 'This challenge was issued for another address.' },
  CHALLENGE_ALREADY_USED: { status: 400, message: 'This challenge was already answered; ask for a new one.' },
  CHALLENGE_EXPIRED: { status: 400, message: 'This challenge expired; ask for a new one.' },
  INVALID_SIGNATURE: { status: 400, message: 'The signature is not one of the challenge by this address.' },
  EMAIL_ALREADY_REGISTERED: { status: 409, message: 'This email already has a dashboard login.' },
  IDEMPOTENCY_KEY_IN_USE: { status: 409, message: 'A request with this Idempotency-Key is still running.' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, message: 'This Idempotency-Key was used with a different request.' },
  /**
   * /facilitator/verify and /settle: the payload's x402 payment-identifier id was used by this account
   * with another payload or other requirements (the extension's 409 Conflict); nothing was run.
   */
  PAYMENT_IDENTIFIER_REUSED: {
    status: 409,
    message: 'This payment identifier was used with a different payment payload or requirements.',
  },
  PAYMENT_FAILED: { status: 422, message: 'The payment failed on chain or expired before landing.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'Request body is too large.' },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: 'Request body must be JSON (Content-Type: application/json).',
  },
  RATE_LIMIT_EXCEEDED: { status: 429, message: 'Rate limit exceeded.' },
  /**
   * Listed by the spec beside RATE_LIMIT_EXCEEDED. gate402 always answers RATE_LIMIT_EXCEEDED;
   * this code is kept so clients matching on either keep working, and is never emitted.
   */
  RATE_LIMIT: { status: 429, message: 'Too many requests.' },
  /**
   * The account's daily budget of network fees the built-in x402 facilitator pays (X402_FEE_BUDGET) has
   * no room for a settlement's worst-case fee: nothing was claimed or broadcast. 429, not 403: it is a
   * quota of the day, lifted at 00:00 UTC, which `retryAfter` counts down to.
   */
  FEE_BUDGET_EXCEEDED: {
    status: 429,
    message: "The account's daily budget of sponsored network fees is spent; retry after 00:00 UTC.",
  },
  /**
   * POST /payment/x402: none of the seller's payment options is one the wallet may pay (scheme, network,
   * token, the buyer's maxAmount, validity, balance); `details` names each option's reason. Nothing was
   * signed or recorded.
   */
  PAYMENT_OPTION_REFUSED: {
    status: 422,
    message:
      "None of the seller's payment options can be paid from this wallet within its limits; nothing was signed.",
  },
  INSUFFICIENT_BALANCE: { status: 422, message: 'Not enough funds for the payment plus fees.' },
  INVALID_PAYMENT_PROOF: { status: 422, message: 'The payment proof is invalid or expired.' },
  PAYMENT_VERIFICATION_FAILED: { status: 422, message: 'The facilitator could not verify the payment.' },
  INVALID_RECIPIENT: { status: 400, message: 'The recipient address is invalid or does not exist.' },
  INTERNAL_ERROR: { status: 500, message: 'Internal error.' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'The service is not ready.' },
  CHAIN_UNAVAILABLE: { status: 503, message: 'The blockchain RPC endpoint is unavailable; retry shortly.' },
} as const satisfies Record<string, { readonly status: number; readonly message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;
