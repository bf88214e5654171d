import type { paths } from './generated/openapi-types.ts';

/** HTTP methods the gateway's operations use, as openapi-typescript names them. */
export type HttpMethod = 'get' | 'post' | 'delete';

/** A path of the served OpenAPI document. */
export type ApiPath = keyof paths;

/**
 * Every operation the gateway serves, by the name of the SDK method that calls it.
 * `satisfies` ties each entry to a path and method of the generated types, so a route removed from the
 * document fails the type-check; test/openapi-sdk.test.ts checks the converse (no operation without a method).
 */
export const OPERATIONS = {
  health: { method: 'get', path: '/healthz' },
  readiness: { method: 'get', path: '/readyz' },
  proofKeys: { method: 'get', path: '/.well-known/gate402.json' },
  account: { method: 'get', path: '/account' },
  networks: { method: 'get', path: '/networks' },
  faucet: { method: 'post', path: '/faucet' },
  createWallet: { method: 'post', path: '/wallets' },
  wallets: { method: 'get', path: '/wallets' },
  sendPayment: { method: 'post', path: '/payment/send' },
  receivePayment: { method: 'post', path: '/payment/receive' },
  paymentStatus: { method: 'get', path: '/payment/status/{paymentId}' },
  paymentHistory: { method: 'get', path: '/payment/history/{walletAddress}' },
  buildSendTransaction: { method: 'post', path: '/transaction/send' },
  buildReceiveTransaction: { method: 'post', path: '/transaction/receive' },
  verifyPayment: { method: 'post', path: '/v1/payments/verify' },
  tokenInfo: { method: 'get', path: '/token/info/{mint_address}' },
  portfolio: { method: 'get', path: '/portfolio/{public_key}' },
  facilitatorSupported: { method: 'get', path: '/facilitator/supported' },
  facilitatorVerify: { method: 'post', path: '/facilitator/verify' },
  facilitatorSettle: { method: 'post', path: '/facilitator/settle' },
  createWebhook: { method: 'post', path: '/webhooks' },
  webhooks: { method: 'get', path: '/webhooks' },
  deleteWebhook: { method: 'delete', path: '/webhooks/{id}' },
  webhookDeliveries: { method: 'get', path: '/webhooks/{id}/deliveries' },
  redeliverWebhook: { method: 'post', path: '/webhooks/{id}/deliveries/{deliveryId}/redeliver' },
} as const satisfies Record<string, { readonly method: HttpMethod; readonly path: ApiPath }>;

export type OperationName = keyof typeof OPERATIONS;

type OperationOf<N extends OperationName> = NonNullable<
  paths[(typeof OPERATIONS)[N]['path']][(typeof OPERATIONS)[N]['method']]
>;

/** The JSON request body of an operation, as the served document declares it. */
export type RequestBody<N extends OperationName> =
  OperationOf<N> extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;

/** The JSON body of an operation's 200 answer. */
export type ResponseBody<N extends OperationName> =
  OperationOf<N> extends { responses: { 200: { content: { 'application/json': infer R } } } } ? R : never;

/** The query parameters of an operation. */
export type QueryParameters<N extends OperationName> =
  OperationOf<N> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
