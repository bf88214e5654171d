export { BLOCKHASH_HEADER, isWebBrowser, type PaywallPageOptions } from './browser-paywall/paywall-page.ts';
export { fromAtomicUnits, toAtomicUnits } from './decimal-amount.ts';
export { EXACT_SCHEME, type ExactTokenOption } from './exact-offer.ts';
export {
  type BodyOf,
  Gate402Client,
  type Gate402ClientOptions,
  type Readiness,
  type RequestOptions,
  type ResponseOf,
} from './gate402-client.ts';
export {
  type ErrorBody,
  type ErrorCode,
  Gate402Error,
  Gate402TransportError,
  isGate402Error,
} from './gate402-error.ts';
export { OPERATIONS, type OperationName } from './operations.ts';
export {
  type PayingFetchOptions,
  PaymentDeclinedError,
  payingFetch,
  paymentResponseOf,
} from './paying-fetch.ts';
export {
  type PaymentEvent,
  type PaymentEventType,
  type VerifyWebhookOptions,
  verifyPaymentWebhook,
  type WebhookHeaders,
  WebhookVerificationError,
} from './payment-webhook.ts';
export {
  type ExactPayment,
  type Gate402Payment,
  Gate402Paywall,
  type NativePayment,
  type PaywallDecision,
  type PaywallRequest,
  type ProtectOptions,
} from './paywall.ts';
export type {
  PaywallAbort,
  PaywallAfterSettleHook,
  PaywallAfterVerifyHook,
  PaywallBeforeSettleHook,
  PaywallBeforeVerifyHook,
  PaywallFailureContext,
  PaywallHookContext,
  PaywallHookName,
  PaywallHookRequest,
  PaywallHooks,
  PaywallOnSettleFailureHook,
  PaywallOnVerifyFailureHook,
  PaywallSettleResultContext,
  PaywallVerifyResultContext,
} from './paywall-hooks.ts';
export { PaywallHookStop } from './paywall-hooks.ts';
export {
  UPTO_SCHEME,
  type UptoPayment,
  type UptoSettlement,
  UptoSettleRefused,
  type UptoTokenOption,
} from './upto-offer.ts';
export { GATE402_NATIVE_SCHEME, NATIVE_ASSET } from './x402/gate402-native.ts';
export * from './x402/headers.ts';
