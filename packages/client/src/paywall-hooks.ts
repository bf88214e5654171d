import type { PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';

/** What a hook sees of the request the payment came with. */
export interface PaywallHookRequest {
  /** The absolute URL the request was made to. */
  readonly url: string;
  header(name: string): string | undefined;
}

/**
 * What every paywall hook is given, named as x402's own resource server names it (`@x402/core/server`'s
 * `VerifyContext` / `SettleContext`). Treat the payment fields as read-only: a hook steers the payment by
 * what it returns (abort, recover), not by changing them.
 */
export interface PaywallHookContext {
  /** 2, or 1 for an x402 v1 buyer (X-PAYMENT). */
  readonly x402Version: 1 | 2;
  /** The payment as the buyer presented it, decoded from its header (x402's PaymentPayload). */
  readonly paymentPayload: Readonly<Record<string, unknown>>;
  /** The offered requirement the payment is checked against (for a v1 buyer: the v2 form of it). */
  readonly requirements: Readonly<PaymentRequirements>;
  /** The request, as x402's `transportContext`. */
  readonly transportContext: { readonly request: PaywallHookRequest };
  /**
   * Shared by every hook of this request, and handed to the handler as the payment's `metadata`
   * (`res.locals.payment.metadata`): what a hook wants the handler to know.
   */
  readonly metadata: Record<string, unknown>;
  /**
   * Sets a header on the answer to a paid request (e.g. a receipt id). PAYMENT-RESPONSE and
   * X-PAYMENT-RESPONSE stay the paywall's own.
   */
  setResponseHeader(name: string, value: string): void;
}

export interface PaywallVerifyResultContext extends PaywallHookContext {
  readonly result: Readonly<VerifyResponse>;
}
export interface PaywallSettleResultContext extends PaywallHookContext {
  readonly result: Readonly<SettleResponse>;
}
export interface PaywallFailureContext extends PaywallHookContext {
  readonly error: Error;
}

/** A veto: the buyer is answered 402 with the reason, and nothing is settled. */
export interface PaywallAbort {
  readonly abort: true;
  readonly reason: string;
  readonly message?: string;
}

type Returns<T> = T | undefined | Promise<T | undefined>;
type Maybe<T> = Returns<T> | void | Promise<void>;

export type PaywallBeforeVerifyHook = (context: PaywallHookContext) => Maybe<PaywallAbort>;
export type PaywallAfterVerifyHook = (context: PaywallVerifyResultContext) => Maybe<PaywallAbort>;
export type PaywallOnVerifyFailureHook = (
  context: PaywallFailureContext,
) => Maybe<{ readonly recovered: true; readonly result: VerifyResponse }>;
export type PaywallBeforeSettleHook = (context: PaywallHookContext) => Maybe<PaywallAbort>;
export type PaywallAfterSettleHook = (context: PaywallSettleResultContext) => Maybe<never>;
export type PaywallOnSettleFailureHook = (
  context: PaywallFailureContext,
) => Maybe<{ readonly recovered: true; readonly result: SettleResponse }>;

type OneOrMany<T> = T | readonly T[];

/**
 * Lifecycle hooks of a protected resource, named as x402's `x402ResourceServer` names them. Each takes
 * one function or a list, run in order.
 *
 * Money rules, whatever a hook does:
 * - `onBeforeVerify`, `onAfterVerify` and `onBeforeSettle` run before anything is settled. An abort
 *   answers the buyer 402 with its reason; a hook that throws answers 500 (the seller's fault). Either
 *   way nothing is settled, and the buyer's signed payment stays unspent (or its native proof unredeemed).
 * - `onAfterSettle` runs once the payment is settled: a hook that throws is reported to `onHookError`,
 *   and the payment stands (the buyer is served).
 * - `onVerifyFailure` / `onSettleFailure` may recover a failure with a result of their own (the paywall
 *   then goes on as if the facilitator had answered it: a recovered settle serves the buyer, on the
 *   seller's word); one that throws is reported, and the failure stands.
 * - A settle retried after its answer was lost (see ProtectedResource) does not ask `onBeforeSettle`
 *   again: the settlement may already be on its way.
 * - A native `gate402-native` payment is checked and redeemed in one call (POST /payment/receive): both
 *   before-hooks run before it, `onAfterVerify` (which cannot abort there: the proof is taken) and
 *   `onAfterSettle` after it, and `onVerifyFailure` sees a refused proof but cannot recover it.
 */
export interface PaywallHooks {
  readonly onBeforeVerify?: OneOrMany<PaywallBeforeVerifyHook>;
  readonly onAfterVerify?: OneOrMany<PaywallAfterVerifyHook>;
  readonly onVerifyFailure?: OneOrMany<PaywallOnVerifyFailureHook>;
  readonly onBeforeSettle?: OneOrMany<PaywallBeforeSettleHook>;
  readonly onAfterSettle?: OneOrMany<PaywallAfterSettleHook>;
  readonly onSettleFailure?: OneOrMany<PaywallOnSettleFailureHook>;
  /** Told when a hook throws. Default: `console.error`. */
  readonly onHookError?: (hook: PaywallHookName, error: unknown) => void;
}

export type PaywallHookName = Exclude<keyof PaywallHooks, 'onHookError'>;

/**
 * Thrown out of a hook run to stop the payment before anything is settled: a veto (402 with the reason)
 * or a hook that failed (500). The paywall answers it and settles nothing.
 */
export class PaywallHookStop extends Error {
  constructor(
    readonly kind: 'veto' | 'failed',
    message: string,
  ) {
    super(message);
    this.name = 'PaywallHookStop';
  }
}

/** The hooks of one payment: one request's shared metadata and headers, and the rules above. */
export class PaywallHookRun {
  readonly #hooks: PaywallHooks;
  readonly #base: PaywallHookContext;
  readonly #headers: Record<string, string> = {};

  constructor(
    hooks: PaywallHooks | undefined,
    base: Omit<PaywallHookContext, 'metadata' | 'setResponseHeader'>,
  ) {
    this.#hooks = hooks ?? {};
    const headers = this.#headers;
    this.#base = {
      ...base,
      metadata: {},
      setResponseHeader(name, value) {
        headers[name] = value;
      },
    };
  }

  /** The metadata hooks left for the handler. */
  get metadata(): Readonly<Record<string, unknown>> {
    return this.#base.metadata;
  }

  /** The headers hooks set for the paid answer. */
  get headers(): Readonly<Record<string, string>> {
    return this.#headers;
  }

  /** Runs a verify (a call to the facilitator) between its hooks; a recovered failure is its answer. */
  async verify<R extends VerifyResponse>(call: () => Promise<R>): Promise<R | VerifyResponse> {
    await this.before('onBeforeVerify');
    let result: R | VerifyResponse;
    try {
      result = await call();
      if (!result.isValid) {
        const reason = result.invalidReason ?? 'invalid_payment';
        const error = new Error(result.invalidMessage ? `${reason}: ${result.invalidMessage}` : reason);
        result = (await this.verifyFailure(error)) ?? result;
      }
    } catch (error) {
      const recovered = await this.verifyFailure(asError(error));
      if (recovered === undefined) throw error;
      result = recovered;
    }
    if (!result.isValid) return result;
    await this.before('onAfterVerify', { result });
    return result;
  }

  /** Runs the before-hooks of a name; an abort or a hook that throws stops the payment (PaywallHookStop). */
  async before(
    name: 'onBeforeVerify' | 'onBeforeSettle' | 'onAfterVerify',
    extra: { readonly result?: VerifyResponse } = {},
  ): Promise<void> {
    for (const hook of listOf(this.#hooks[name])) {
      let answer: unknown;
      try {
        answer = await (hook as (context: PaywallHookContext) => unknown)({ ...this.#base, ...extra });
      } catch (error) {
        this.#report(name, error);
        throw new PaywallHookStop('failed', `the paywall's ${name} hook failed: ${asError(error).message}`);
      }
      if (isAbort(answer)) {
        throw new PaywallHookStop(
          'veto',
          answer.message === undefined ? answer.reason : `${answer.reason}: ${answer.message}`,
        );
      }
    }
  }

  /** Tells onVerifyFailure; the first recovery is the answer. A hook that throws is reported and skipped. */
  verifyFailure(error: Error): Promise<VerifyResponse | undefined> {
    return this.#failure('onVerifyFailure', error) as Promise<VerifyResponse | undefined>;
  }

  /** Tells onSettleFailure (a settle that threw, or answered no success); the first recovery is the answer. */
  settleFailure(error: unknown): Promise<SettleResponse | undefined> {
    const failure =
      isSettleAnswer(error) && !error.success
        ? new Error(
            `${error.errorReason ?? 'settle_failed'}${error.errorMessage ? `: ${error.errorMessage}` : ''}`,
          )
        : asError(error);
    return this.#failure('onSettleFailure', failure) as Promise<SettleResponse | undefined>;
  }

  /** After a settlement: onAfterSettle, whose failures are reported and never undo the payment. */
  async afterSettle(result: SettleResponse): Promise<void> {
    for (const hook of listOf(this.#hooks.onAfterSettle)) {
      try {
        await hook({ ...this.#base, result });
      } catch (error) {
        this.#report('onAfterSettle', error);
      }
    }
  }

  /**
   * After a native payment was redeemed (checked and taken at once): onAfterVerify, whose abort comes
   * too late and is reported, then onAfterSettle.
   */
  async afterRedeemed(result: SettleResponse): Promise<void> {
    const verdict: VerifyResponse = {
      isValid: true,
      ...(result.payer === undefined ? {} : { payer: result.payer }),
    };
    for (const hook of listOf(this.#hooks.onAfterVerify)) {
      try {
        const answer = await hook({ ...this.#base, result: verdict });
        if (isAbort(answer)) {
          this.#report(
            'onAfterVerify',
            new Error(`an abort (${answer.reason}) after a native payment was redeemed: the payment stands`),
          );
        }
      } catch (error) {
        this.#report('onAfterVerify', error);
      }
    }
    await this.afterSettle(result);
  }

  async #failure(
    name: 'onVerifyFailure' | 'onSettleFailure',
    error: Error,
  ): Promise<VerifyResponse | SettleResponse | undefined> {
    for (const hook of listOf(this.#hooks[name])) {
      try {
        const answer = (await (hook as (context: PaywallFailureContext) => unknown)({
          ...this.#base,
          error,
        })) as { recovered?: unknown; result?: VerifyResponse | SettleResponse } | undefined;
        if (answer?.recovered === true && answer.result !== undefined) return answer.result;
      } catch (hookError) {
        this.#report(name, hookError);
      }
    }
    return undefined;
  }

  #report(name: PaywallHookName, error: unknown): void {
    try {
      if (this.#hooks.onHookError !== undefined) this.#hooks.onHookError(name, error);
      else console.error(`gate402 paywall: the ${name} hook failed`, error);
    } catch {
      // A failing reporter changes nothing about the payment.
    }
  }
}

function listOf<T>(value: OneOrMany<T> | undefined): readonly T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? (value as readonly T[]) : [value as T];
}

function isAbort(value: unknown): value is PaywallAbort {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { abort?: unknown }).abort === true &&
    typeof (value as { reason?: unknown }).reason === 'string'
  );
}

function isSettleAnswer(value: unknown): value is SettleResponse {
  return (
    typeof value === 'object' && value !== null && typeof (value as SettleResponse).success === 'boolean'
  );
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
