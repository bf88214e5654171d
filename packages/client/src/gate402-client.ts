import { Gate402Error, Gate402TransportError, isErrorBody } from './gate402-error.ts';
import {
  type HttpMethod,
  OPERATIONS,
  type OperationName,
  type QueryParameters,
  type RequestBody,
  type ResponseBody,
} from './operations.ts';

export interface Gate402ClientOptions {
  /** The gateway's base URL, e.g. `http://127.0.0.1:8402`. */
  readonly url: string | URL;
  /** An API key (`g402_sk_…`). Only the public endpoints (health, proof keys) work without one. */
  readonly apiKey?: string | undefined;
  /** Give up on a request after this long. Default 150 s: a receive may wait up to 120 s for the chain. */
  readonly timeoutMs?: number;
  /** The fetch to use; default the global one. */
  readonly fetch?: typeof fetch;
}

export interface RequestOptions {
  /**
   * Sent as `Idempotency-Key` on the POSTs that move money: the same key and body answer the first
   * answer again, so a retry after a lost answer never pays twice.
   */
  readonly idempotencyKey?: string;
  readonly signal?: AbortSignal;
}

/** The operations the gateway honours an Idempotency-Key on: those that move money or consume a proof. */
const IDEMPOTENT: ReadonlySet<OperationName> = new Set([
  'sendPayment',
  'payX402',
  'refundPayment',
  'receivePayment',
  'buildSendTransaction',
  'buildReceiveTransaction',
]);

/** Every answer type of the SDK, by method name: `ResponseOf<'sendPayment'>` is a send result. */
export type ResponseOf<N extends OperationName> = ResponseBody<N>;
export type BodyOf<N extends OperationName> = RequestBody<N>;

/** GET /readyz answers 503 with the same shape when a check fails; readiness() returns both. */
export type Readiness = ResponseBody<'readiness'>;

interface CallParts {
  readonly path?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly body?: unknown;
  readonly options?: RequestOptions | undefined;
  /** Statuses besides 200 whose JSON body is an answer, not an error. */
  readonly alsoOk?: readonly number[];
}

/**
 * A typed client for every endpoint of a gate402 gateway. Request and answer types come from the
 * gateway's OpenAPI document (src/generated/openapi-types.ts). A refusal throws {@link Gate402Error}
 * carrying the error catalogue's `code`; a transport failure throws {@link Gate402TransportError}.
 *
 * @example
 * const gate402 = new Gate402Client({ url: 'http://127.0.0.1:8402', apiKey: process.env.GATE402_API_KEY });
 * const { address } = await gate402.createWallet({ chain: 'solana' });
 * const sent = await gate402.sendPayment({ walletAddress: address, recipientAddress: seller, amount: 0.01 });
 */
export class Gate402Client {
  readonly url: URL;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: Gate402ClientOptions) {
    this.url = new URL(options.url);
    this.#apiKey = options.apiKey;
    this.#timeoutMs = options.timeoutMs ?? 150_000;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /** GET /healthz: the process answers. */
  health(options?: RequestOptions): Promise<ResponseOf<'health'>> {
    return this.#call('health', { options });
  }

  /** GET /readyz: storage, Redis and every chain answer (`status: 'ready'`), or which check failed. */
  readiness(options?: RequestOptions): Promise<Readiness> {
    return this.#call('readiness', { options, alsoOk: [503] });
  }

  /** GET /.well-known/gate402.json: the public keys that sign this gateway's payment proofs. */
  proofKeys(options?: RequestOptions): Promise<ResponseOf<'proofKeys'>> {
    return this.#call('proofKeys', { options });
  }

  /** GET /account: the caller's account, plan and rate limit. */
  account(options?: RequestOptions): Promise<ResponseOf<'account'>> {
    return this.#call('account', { options });
  }

  /**
   * GET /account/summary: what the account's payments added up to in the last `days` UTC days (1–90,
   * default 30): paid volume per day and asset, totals, and the resources that earned most.
   */
  accountSummary(
    query: QueryParameters<'accountSummary'> = {},
    options?: RequestOptions,
  ): Promise<ResponseOf<'accountSummary'>> {
    return this.#call('accountSummary', { query, options });
  }

  /** GET /networks: the configured networks (CAIP-2 id, native currency, RPC URLs, tokens). */
  networks(options?: RequestOptions): Promise<ResponseOf<'networks'>> {
    return this.#call('networks', { options });
  }

  /** POST /faucet: free funds on a local network. */
  faucet(body: BodyOf<'faucet'>, options?: RequestOptions): Promise<ResponseOf<'faucet'>> {
    return this.#call('faucet', { body, options });
  }

  /**
   * POST /wallets: a custodial wallet, or a watch-only address on proof of control (`watchOnly`,
   * `challenge` from {@link walletChallenge} and the address's `signature` of it).
   *
   * @example
   * const { challenge } = await gate402.walletChallenge({ chain: 'evm', address: account.address });
   * const signature = await account.signMessage({ message: challenge }); // viem: EIP-191 personal_sign
   * await gate402.createWallet({ chain: 'evm', address: account.address, watchOnly: true, challenge, signature });
   */
  createWallet(body: BodyOf<'createWallet'>, options?: RequestOptions): Promise<ResponseOf<'createWallet'>> {
    return this.#call('createWallet', { body, options });
  }

  /**
   * POST /wallets/challenge: the text an address's key signs to register it as watch-only (valid 10
   * minutes, once, for this account). Solana: sign its UTF-8 bytes (wallet-standard signMessage) and
   * send the signature base58; EVM: personal_sign.
   */
  walletChallenge(
    body: BodyOf<'walletChallenge'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'walletChallenge'>> {
    return this.#call('walletChallenge', { body, options });
  }

  /**
   * POST /wallets/{address}/token-accounts: a Solana wallet's associated token account for an asset
   * (where x402 `exact` payments to it go), opened if it is a custodial wallet without one (the wallet
   * pays the rent-exempt deposit from its SOL); for a watch-only wallet, whether it exists.
   */
  openTokenAccount(
    address: string,
    body: BodyOf<'openTokenAccount'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'openTokenAccount'>> {
    return this.#call('openTokenAccount', { path: { address }, body, options });
  }

  /** GET /wallets: the caller's wallets with their balances and labels. */
  wallets(options?: RequestOptions): Promise<ResponseOf<'wallets'>> {
    return this.#call('wallets', { options });
  }

  /**
   * PATCH /wallets/{address}: sets one of your wallets' `label` (at most 64 characters once trimmed, no
   * control characters), or clears it with `null`. Not a wallet of your account: 404 `WALLET_NOT_FOUND`.
   *
   * @example
   * await gate402.updateWallet(address, { label: 'Shop till' });
   */
  updateWallet(
    address: string,
    body: BodyOf<'updateWallet'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'updateWallet'>> {
    return this.#call('updateWallet', { path: { address }, body, options });
  }

  /** POST /payment/send (spec §4.1): pay from a custodial wallet; the answer's `paymentProof` goes to the seller. */
  sendPayment(body: BodyOf<'sendPayment'>, options?: RequestOptions): Promise<ResponseOf<'sendPayment'>> {
    return this.#call('sendPayment', { body, options });
  }

  /**
   * POST /payment/x402: pay an x402 seller's 402 from a custodial wallet. Give the seller's
   * PAYMENT-REQUIRED header value (or its v1 body), the URL and `maxAmount` per token; the answer's
   * `paymentHeader` goes to the seller under `paymentHeaderName`. {@link payingFetch} does all of it.
   */
  payX402(body: BodyOf<'payX402'>, options?: RequestOptions): Promise<ResponseOf<'payX402'>> {
    return this.#call('payX402', { body, options });
  }

  /**
   * POST /payment/x402/{paymentId}/check: the seller answered a paid request; the gateway looks at the
   * chain for that payment now (it confirms only as the chain shows it).
   */
  checkX402Payment(paymentId: string, options?: RequestOptions): Promise<ResponseOf<'checkX402Payment'>> {
    return this.#call('checkX402Payment', { path: { paymentId }, options });
  }

  /**
   * POST /payment/refund/{paymentId}: give back all (the default) or `amount` of a payment the caller
   * received, to its payer, in the same asset and network; the answer is the refund, a new payment with
   * `refundOf`. A watch-only wallet's refund comes back unsigned (`mode: 'local'`). Refunds of one payment
   * never sum above it; the same `idempotencyKey` answers the same refund (docs/refunds.md).
   *
   * @example
   * const refund = await gate402.refundPayment(receipt.paymentId, { amount: 0.5, reason: 'not delivered' });
   */
  refundPayment(
    paymentId: string,
    body: BodyOf<'refundPayment'> = {},
    options?: RequestOptions,
  ): Promise<ResponseOf<'refundPayment'>> {
    return this.#call('refundPayment', { path: { paymentId }, body, options });
  }

  /** POST /payment/receive (spec §4.2): verify a proof for one of the caller's wallets; once per proof. */
  receivePayment(
    body: BodyOf<'receivePayment'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'receivePayment'>> {
    return this.#call('receivePayment', { body, options });
  }

  /** GET /payment/status/{paymentId} (spec §4.3). */
  paymentStatus(paymentId: string, options?: RequestOptions): Promise<ResponseOf<'paymentStatus'>> {
    return this.#call('paymentStatus', { path: { paymentId }, options });
  }

  /** GET /payment/history/{walletAddress} (spec §4.4), newest first; `type` all, `limit` 50, `offset` 0 by default. */
  paymentHistory(
    walletAddress: string,
    query: QueryParameters<'paymentHistory'> = {},
    options?: RequestOptions,
  ): Promise<ResponseOf<'paymentHistory'>> {
    return this.#call('paymentHistory', { path: { walletAddress }, query, options });
  }

  /** POST /transaction/send (spec §4.6): an unsigned payment for the caller's own wallet to sign and broadcast. */
  buildSendTransaction(
    body: BodyOf<'buildSendTransaction'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'buildSendTransaction'>> {
    return this.#call('buildSendTransaction', { body, options });
  }

  /** POST /transaction/receive (spec §4.7): verify a proof and build an unsigned receipt. */
  buildReceiveTransaction(
    body: BodyOf<'buildReceiveTransaction'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'buildReceiveTransaction'>> {
    return this.#call('buildReceiveTransaction', { body, options });
  }

  /** POST /v1/payments/verify (spec §4.5): does this proof pay `amount` atomic units to `recipient`? Never consumes it. */
  verifyPayment(
    body: BodyOf<'verifyPayment'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'verifyPayment'>> {
    return this.#call('verifyPayment', { body, options });
  }

  /** GET /token/info/{mint_address}: a mint or ERC-20 contract. */
  tokenInfo(mintAddress: string, options?: RequestOptions): Promise<ResponseOf<'tokenInfo'>> {
    return this.#call('tokenInfo', { path: { mint_address: mintAddress }, options });
  }

  /** GET /portfolio/{public_key}: native balance and token accounts of any address. */
  portfolio(publicKey: string, options?: RequestOptions): Promise<ResponseOf<'portfolio'>> {
    return this.#call('portfolio', { path: { public_key: publicKey }, options });
  }

  /**
   * POST /facilitator/accepts (faremeter's facilitator interface): payment requirements completed with
   * what buyers need from the facilitator (the Solana fee payer, the mint's decimals and program).
   */
  facilitatorAccepts(
    body: BodyOf<'facilitatorAccepts'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'facilitatorAccepts'>> {
    return this.#call('facilitatorAccepts', { body, options });
  }

  /**
   * GET /facilitator/discovery/resources: the x402 `bazaar` catalogue — resources sellers declared and
   * were paid for through this facilitator — of your account (the key is sent when the client has one).
   *
   * @example
   * const { items } = await gate402.discoveryResources({ type: 'http', limit: 20 });
   */
  discoveryResources(
    query: QueryParameters<'discoveryResources'> = {},
    options?: RequestOptions,
  ): Promise<ResponseOf<'discoveryResources'>> {
    return this.#call('discoveryResources', { query, options });
  }

  /** GET /facilitator/discovery/search: catalogued resources whose text holds every word of `query`. */
  discoverySearch(
    query: QueryParameters<'discoverySearch'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'discoverySearch'>> {
    return this.#call('discoverySearch', { query, options });
  }

  /** GET /facilitator/supported: the x402 kinds (scheme, network) the built-in facilitator verifies and settles. */
  facilitatorSupported(options?: RequestOptions): Promise<ResponseOf<'facilitatorSupported'>> {
    return this.#call('facilitatorSupported', { options });
  }

  /** POST /facilitator/verify: x402's verify (`{x402Version, paymentPayload, paymentRequirements}`). */
  facilitatorVerify(
    body: BodyOf<'facilitatorVerify'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'facilitatorVerify'>> {
    return this.#call('facilitatorVerify', { body, options });
  }

  /** POST /facilitator/settle: x402's settle; once per payment (`duplicate_settlement` after). */
  facilitatorSettle(
    body: BodyOf<'facilitatorSettle'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'facilitatorSettle'>> {
    return this.#call('facilitatorSettle', { body, options });
  }

  /** POST /webhooks: a webhook endpoint; the answer holds its signing secret, shown once. */
  createWebhook(
    body: BodyOf<'createWebhook'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'createWebhook'>> {
    return this.#call('createWebhook', { body, options });
  }

  /** GET /webhooks: the caller's webhook endpoints (never their secrets). */
  webhooks(options?: RequestOptions): Promise<ResponseOf<'webhooks'>> {
    return this.#call('webhooks', { options });
  }

  /** DELETE /webhooks/{id}: the endpoint and its delivery log. */
  deleteWebhook(id: string, options?: RequestOptions): Promise<ResponseOf<'deleteWebhook'>> {
    return this.#call('deleteWebhook', { path: { id }, options });
  }

  /**
   * PATCH /webhooks/{id}: enable an endpoint again (one that answered 410 Gone is disabled), or disable it.
   * @example await sdk.updateWebhook('whk_01…', { enabled: true });
   */
  updateWebhook(
    id: string,
    body: BodyOf<'updateWebhook'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'updateWebhook'>> {
    return this.#call('updateWebhook', { path: { id }, body, options });
  }

  /** GET /webhooks/{id}/deliveries: the endpoint's delivery log, newest event first. */
  webhookDeliveries(
    id: string,
    query: QueryParameters<'webhookDeliveries'> = {},
    options?: RequestOptions,
  ): Promise<ResponseOf<'webhookDeliveries'>> {
    return this.#call('webhookDeliveries', { path: { id }, query, options });
  }

  /** POST /webhooks/{id}/deliveries/{deliveryId}/redeliver: send a delivery again now. */
  redeliverWebhook(
    id: string,
    deliveryId: string,
    options?: RequestOptions,
  ): Promise<ResponseOf<'redeliverWebhook'>> {
    return this.#call('redeliverWebhook', { path: { id, deliveryId }, options });
  }

  /**
   * GET /spend-policy: the spend policies that bind this key (its account's and its own) and what each
   * daily cap has left. Any key may read its own.
   */
  spendPolicy(options?: RequestOptions): Promise<ResponseOf<'spendPolicy'>> {
    return this.#call('spendPolicy', { options });
  }

  /** GET /spend-policies: every spend policy of the account. Needs a key with the `admin` scope. */
  spendPolicies(options?: RequestOptions): Promise<ResponseOf<'spendPolicies'>> {
    return this.#call('spendPolicies', { options });
  }

  /** GET /spend-policies/account: the account's spend policy. Needs a key with the `admin` scope. */
  accountSpendPolicy(options?: RequestOptions): Promise<ResponseOf<'accountSpendPolicy'>> {
    return this.#call('accountSpendPolicy', { options });
  }

  /**
   * PUT /spend-policies/account: set (replace) the account's spend policy, which binds every custodial
   * payment of the account. Needs a key with the `admin` scope.
   * @example await admin.setAccountSpendPolicy({ limits: [{ network: 'solana:devnet', asset: 'USDC', maxPerDay: '25' }] });
   */
  setAccountSpendPolicy(
    body: BodyOf<'setAccountSpendPolicy'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'setAccountSpendPolicy'>> {
    return this.#call('setAccountSpendPolicy', { body, options });
  }

  /** DELETE /spend-policies/account: remove the account's spend policy. Needs the `admin` scope. */
  deleteAccountSpendPolicy(options?: RequestOptions): Promise<ResponseOf<'deleteAccountSpendPolicy'>> {
    return this.#call('deleteAccountSpendPolicy', { options });
  }

  /** GET /spend-policies/keys/{keyId}: one key's spend policy. Needs a key with the `admin` scope. */
  keySpendPolicy(keyId: string, options?: RequestOptions): Promise<ResponseOf<'keySpendPolicy'>> {
    return this.#call('keySpendPolicy', { path: { keyId }, options });
  }

  /**
   * PUT /spend-policies/keys/{keyId}: set (replace) one key's spend policy, which binds that key's
   * payments on top of the account's. Needs a key with the `admin` scope.
   * @example await admin.setKeySpendPolicy('key_01…', { allowedRecipients: ['9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin'], allowedHosts: ['api.example.com'], expiresAt: '2026-12-31T00:00:00Z' });
   */
  setKeySpendPolicy(
    keyId: string,
    body: BodyOf<'setKeySpendPolicy'>,
    options?: RequestOptions,
  ): Promise<ResponseOf<'setKeySpendPolicy'>> {
    return this.#call('setKeySpendPolicy', { path: { keyId }, body, options });
  }

  /** DELETE /spend-policies/keys/{keyId}: remove one key's spend policy. Needs the `admin` scope. */
  deleteKeySpendPolicy(keyId: string, options?: RequestOptions): Promise<ResponseOf<'deleteKeySpendPolicy'>> {
    return this.#call('deleteKeySpendPolicy', { path: { keyId }, options });
  }

  /**
   * GET /payment/export: the account's payments of a date range (one wallet or all), oldest first, as
   * CSV or JSON Lines, streamed: the body is read as the caller reads it, so a million rows never sit in
   * memory. The time limit applies until the answer starts; `options.signal` stops the download.
   */
  async exportPayments(
    query: QueryParameters<'exportPayments'> = {},
    options?: RequestOptions,
  ): Promise<ReadableStream<Uint8Array>> {
    const { response, label } = await this.#exchange(
      'exportPayments',
      { query, options },
      'text/csv, application/x-ndjson, application/json',
      // Nothing is read within the time limit: the body is the caller's to read, at its own pace.
      async () => undefined,
    );
    if (response.ok && response.body !== null) return response.body;
    const text = await response.text().catch(() => '');
    throw refusal(response.status, parsedOrUndefined(text), label, undefined);
  }

  /** Where an operation is served, with the call's path parameters and query. */
  #urlOf(name: OperationName, parts: CallParts): URL {
    const operation: { method: HttpMethod; path: string } = OPERATIONS[name];
    const url = new URL(this.url);
    const basePath = url.pathname.replace(/\/$/, '');
    url.pathname =
      basePath +
      operation.path.replace(/\{(\w+)\}/g, (_, key: string) => encodeURIComponent(parts.path?.[key] ?? ''));
    for (const [key, value] of Object.entries(parts.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url;
  }

  async #call<N extends OperationName>(name: N, parts: CallParts): Promise<ResponseBody<N>> {
    const {
      response,
      read: text,
      label,
      idempotencyKey,
    } = await this.#exchange(name, parts, 'application/json', (answer) => answer.text());
    const json = parsedOrUndefined(text);
    if (json === undefined) {
      throw new Gate402TransportError(`${label} answered ${response.status} without JSON`, {
        status: response.status,
        idempotencyKey,
      });
    }
    if (response.ok || parts.alsoOk?.includes(response.status)) return json as ResponseBody<N>;
    throw refusal(response.status, json, label, idempotencyKey);
  }

  /**
   * Sends one operation and reads its answer with `read`, both within the client's time limit (and the
   * caller's signal, which also stops a body read later). A failure to get an answer is a
   * Gate402TransportError carrying the Idempotency-Key sent, so the call can be retried safely.
   */
  async #exchange<T>(
    name: OperationName,
    parts: CallParts,
    accept: string,
    read: (response: Response) => Promise<T>,
  ): Promise<{ response: Response; read: T; label: string; idempotencyKey: string | undefined }> {
    const operation: { method: HttpMethod; path: string } = OPERATIONS[name];
    const method = operation.method.toUpperCase();
    const label = `${method} ${operation.path}`;
    const headers: Record<string, string> = { accept };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    if (parts.body !== undefined) headers['content-type'] = 'application/json';
    // A key of its own when the caller gave none, so the call can still be retried safely: a transport
    // error carries it (Gate402TransportError.idempotencyKey).
    const idempotencyKey =
      parts.options?.idempotencyKey ??
      (IDEMPOTENT.has(name) ? `gate402-sdk-${crypto.randomUUID()}` : undefined);
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    // A timer this call holds and clears, not AbortSignal.timeout(): Node 20 holds the sources of
    // AbortSignal.any() only weakly, so a GC could collect an otherwise unreferenced timeout signal and,
    // with it, the request's time limit whenever the caller passes a signal of its own.
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
      this.#timeoutMs,
    );
    const signal =
      parts.options?.signal === undefined
        ? deadline.signal
        : AbortSignal.any([parts.options.signal, deadline.signal]);
    try {
      const response = await this.#fetch(this.#urlOf(name, parts), {
        method,
        headers,
        ...(parts.body === undefined ? {} : { body: JSON.stringify(parts.body) }),
        signal,
      });
      return { response, read: await read(response), label, idempotencyKey };
    } catch (error) {
      throw new Gate402TransportError(`${label}: ${describe(error)}`, { cause: error, idempotencyKey });
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The refusal an answer that is not a success stands for: the gateway's error body, or a transport error. */
function refusal(
  status: number,
  json: unknown,
  label: string,
  idempotencyKey: string | undefined,
): Gate402Error | Gate402TransportError {
  if (isErrorBody(json)) return new Gate402Error(status, json);
  return new Gate402TransportError(`${label} answered ${status} without an error body`, {
    status,
    idempotencyKey,
  });
}

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function describe(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return 'timed out';
  return error instanceof Error ? error.message : String(error);
}
