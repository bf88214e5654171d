import type { operations, paths } from './generated/openapi-types.ts';

/** HTTP methods the gateway's operations use, as openapi-typescript names them. */
export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** A path of the served OpenAPI document. */
export type ApiPath = keyof paths;

/** An operation as the SDK calls it: its operationId in the document, and where it is served. */
export interface OperationRoute {
  readonly operationId: keyof operations;
  readonly method: HttpMethod;
  readonly path: ApiPath;
}

/**
 * Every operation the gateway serves, by the name of the SDK method that calls it (names kept from before
 * the document had operationIds, so the SDK's API did not change). Types come from the document's
 * operation of that operationId; `satisfies` ties each entry to an operationId and a path of the
 * generated types, so an operation renamed or removed in the document fails the type-check.
 * test/openapi-sdk.test.ts checks that each path and method serve the operationId listed with them, and
 * the converse (no operation without a method).
 */
export const OPERATIONS = {
  health: { operationId: 'getHealth', method: 'get', path: '/healthz' },
  readiness: { operationId: 'getReadiness', method: 'get', path: '/readyz' },
  proofKeys: { operationId: 'getProofKeys', method: 'get', path: '/.well-known/gate402.json' },
  account: { operationId: 'getAccount', method: 'get', path: '/account' },
  accountSummary: { operationId: 'getAccountSummary', method: 'get', path: '/account/summary' },
  exportPayments: { operationId: 'exportPayments', method: 'get', path: '/payment/export' },
  networks: { operationId: 'listNetworks', method: 'get', path: '/networks' },
  faucet: { operationId: 'fundFromFaucet', method: 'post', path: '/faucet' },
  createWallet: { operationId: 'createWallet', method: 'post', path: '/wallets' },
  walletChallenge: { operationId: 'createWalletChallenge', method: 'post', path: '/wallets/challenge' },
  openTokenAccount: {
    operationId: 'openTokenAccount',
    method: 'post',
    path: '/wallets/{address}/token-accounts',
  },
  wallets: { operationId: 'listWallets', method: 'get', path: '/wallets' },
  updateWallet: { operationId: 'updateWallet', method: 'patch', path: '/wallets/{address}' },
  sendPayment: { operationId: 'sendPayment', method: 'post', path: '/payment/send' },
  payX402: { operationId: 'payX402', method: 'post', path: '/payment/x402' },
  checkX402Payment: {
    operationId: 'checkX402Payment',
    method: 'post',
    path: '/payment/x402/{paymentId}/check',
  },
  refundPayment: {
    operationId: 'refundPayment',
    method: 'post',
    path: '/payment/refund/{paymentId}',
  },
  receivePayment: { operationId: 'receivePayment', method: 'post', path: '/payment/receive' },
  paymentStatus: { operationId: 'getPaymentStatus', method: 'get', path: '/payment/status/{paymentId}' },
  paymentHistory: {
    operationId: 'getPaymentHistory',
    method: 'get',
    path: '/payment/history/{walletAddress}',
  },
  buildSendTransaction: { operationId: 'buildSendTransaction', method: 'post', path: '/transaction/send' },
  buildReceiveTransaction: {
    operationId: 'buildReceiveTransaction',
    method: 'post',
    path: '/transaction/receive',
  },
  verifyPayment: { operationId: 'verifyPayment', method: 'post', path: '/v1/payments/verify' },
  tokenInfo: { operationId: 'getTokenInfo', method: 'get', path: '/token/info/{mint_address}' },
  portfolio: { operationId: 'getPortfolio', method: 'get', path: '/portfolio/{public_key}' },
  facilitatorSupported: {
    operationId: 'getSupportedPaymentKinds',
    method: 'get',
    path: '/facilitator/supported',
  },
  facilitatorVerify: { operationId: 'verifyX402Payment', method: 'post', path: '/facilitator/verify' },
  facilitatorSettle: { operationId: 'settleX402Payment', method: 'post', path: '/facilitator/settle' },
  facilitatorAccepts: { operationId: 'facilitatorAccepts', method: 'post', path: '/facilitator/accepts' },
  discoveryResources: {
    operationId: 'listDiscoveryResources',
    method: 'get',
    path: '/facilitator/discovery/resources',
  },
  discoverySearch: {
    operationId: 'searchDiscoveryResources',
    method: 'get',
    path: '/facilitator/discovery/search',
  },
  createWebhook: { operationId: 'createWebhook', method: 'post', path: '/webhooks' },
  webhooks: { operationId: 'listWebhooks', method: 'get', path: '/webhooks' },
  deleteWebhook: { operationId: 'deleteWebhook', method: 'delete', path: '/webhooks/{id}' },
  updateWebhook: { operationId: 'updateWebhook', method: 'patch', path: '/webhooks/{id}' },
  webhookDeliveries: {
    operationId: 'listWebhookDeliveries',
    method: 'get',
    path: '/webhooks/{id}/deliveries',
  },
  redeliverWebhook: {
    operationId: 'redeliverWebhookDelivery',
    method: 'post',
    path: '/webhooks/{id}/deliveries/{deliveryId}/redeliver',
  },
  spendPolicy: { operationId: 'getOwnSpendPolicy', method: 'get', path: '/spend-policy' },
  spendPolicies: { operationId: 'listSpendPolicies', method: 'get', path: '/spend-policies' },
  accountSpendPolicy: {
    operationId: 'getAccountSpendPolicy',
    method: 'get',
    path: '/spend-policies/account',
  },
  setAccountSpendPolicy: {
    operationId: 'setAccountSpendPolicy',
    method: 'put',
    path: '/spend-policies/account',
  },
  deleteAccountSpendPolicy: {
    operationId: 'deleteAccountSpendPolicy',
    method: 'delete',
    path: '/spend-policies/account',
  },
  keySpendPolicy: { operationId: 'getKeySpendPolicy', method: 'get', path: '/spend-policies/keys/{keyId}' },
  setKeySpendPolicy: {
    operationId: 'setKeySpendPolicy',
    method: 'put',
    path: '/spend-policies/keys/{keyId}',
  },
  deleteKeySpendPolicy: {
    operationId: 'deleteKeySpendPolicy',
    method: 'delete',
    path: '/spend-policies/keys/{keyId}',
  },
} as const satisfies Record<string, OperationRoute>;

export type OperationName = keyof typeof OPERATIONS;

/** The document's operation behind an SDK method, by its operationId. */
type OperationOf<N extends OperationName> = operations[(typeof OPERATIONS)[N]['operationId']];

/** The JSON request body of an operation, as the served document declares it. */
export type RequestBody<N extends OperationName> =
  OperationOf<N> extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;

/** The JSON body of an operation's 200 answer. */
export type ResponseBody<N extends OperationName> =
  OperationOf<N> extends { responses: { 200: { content: { 'application/json': infer R } } } } ? R : never;

/** The query parameters of an operation. */
export type QueryParameters<N extends OperationName> =
  OperationOf<N> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
