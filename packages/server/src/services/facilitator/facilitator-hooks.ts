import type { X402Payment } from '../../x402/payment-request.ts';
import type { SettleAnswer, VerifyAnswer } from './facilitator-answers.ts';
import type { FacilitatorService, SettleAsker } from './facilitator-service.ts';

/**
 * What a facilitator hook is given, as x402's own `x402Facilitator` names it (`FacilitatorVerifyContext`,
 * `FacilitatorSettleContext`): the payment and the requirements as the seller sent them. Read-only: a
 * hook steers by what it returns (abort, recover).
 */
export interface FacilitatorHookContext {
  readonly paymentPayload: Readonly<Record<string, unknown>>;
  readonly requirements: Readonly<Record<string, unknown>>;
  /** POST /facilitator/verify or /settle (a seller's x402 middleware), or POST /payment/receive (settle) and /v1/payments/verify (verify). */
  readonly via: 'facilitator' | 'receive';
}
export interface FacilitatorSettleHookContext extends FacilitatorHookContext {
  /** The account whose API key asked to settle: the payment is recorded for it, its fee charged to it. */
  readonly accountId: string;
}
export interface FacilitatorVerifyResultContext extends FacilitatorHookContext {
  readonly result: Readonly<VerifyAnswer>;
}
export interface FacilitatorSettleResultContext extends FacilitatorSettleHookContext {
  readonly result: Readonly<SettleAnswer>;
}
export interface FacilitatorVerifyFailureContext extends FacilitatorHookContext {
  readonly error: Error;
}
export interface FacilitatorSettleFailureContext extends FacilitatorSettleHookContext {
  readonly error: Error;
}

/** A veto: verify answers isValid false, settle success false, with this reason; nothing is sent. */
export interface FacilitatorAbort {
  readonly abort: true;
  readonly reason: string;
  readonly message?: string;
}

type Answer<T> = T | undefined | Promise<T | undefined>;
type Observer = (...args: never[]) => unknown;

export type FacilitatorBeforeVerifyHook = (
  context: FacilitatorHookContext,
) => Answer<FacilitatorAbort | undefined>;
export type FacilitatorAfterVerifyHook = (context: FacilitatorVerifyResultContext) => unknown;
export type FacilitatorOnVerifyFailureHook = (
  context: FacilitatorVerifyFailureContext,
) => Answer<{ readonly recovered: true; readonly result: VerifyAnswer }>;
export type FacilitatorBeforeSettleHook = (
  context: FacilitatorSettleHookContext,
) => Answer<FacilitatorAbort | undefined>;
export type FacilitatorAfterSettleHook = (context: FacilitatorSettleResultContext) => unknown;
export type FacilitatorOnSettleFailureHook = (
  context: FacilitatorSettleFailureContext,
) => Answer<{ readonly recovered: true; readonly result: SettleAnswer }>;

type OneOrMany<T> = T | readonly T[];

/**
 * Lifecycle hooks of the built-in facilitator, named as `x402Facilitator` names them, given to
 * `createGateway(config, { facilitatorHooks })` or `startServer(config, logger, { facilitatorHooks })`.
 * Each takes one function or a list, run in order. They run for every verify and settle the facilitator
 * does: POST /facilitator/verify and /settle, and x402 payloads given to POST /payment/receive (which
 * settles at once: settle hooks only) or POST /v1/payments/verify (verify hooks only).
 *
 * Money rules, whatever a hook does:
 * - `onBeforeVerify` / `onBeforeSettle` run before anything is checked or signed. An abort answers
 *   `isValid: false` / `success: false` with its reason; a hook that throws is reported to `onHookError`
 *   and answers `unexpected_verify_error` / `unexpected_settle_error` (its message is not told to the
 *   seller). Either way nothing is claimed, signed or sent: the buyer's authorization stays unspent.
 * - `onAfterVerify` / `onAfterSettle` see a valid verify / a successful settle. A hook that throws is
 *   reported and the answer stands: a settled payment stays settled and recorded.
 * - `onVerifyFailure` / `onSettleFailure` see an invalid verify / a settle that failed or threw
 *   (`duplicate_settlement`, `settlement_pending`, FEE_BUDGET_EXCEEDED, …) and may recover it with a
 *   result of their own, which is then the answer (after-hooks run on a recovered verify, as in x402).
 *   A recovery changes the answer only: what the facilitator recorded or sent stays as it is, and a
 *   pending settlement is still finished (or failed) by the settlement finisher.
 * - A settlement answered `settlement_pending` that the finisher completes later is not announced to
 *   `onAfterSettle`: follow it through the payment's events (stream, webhooks).
 */
export interface FacilitatorHooks {
  readonly onBeforeVerify?: OneOrMany<FacilitatorBeforeVerifyHook>;
  readonly onAfterVerify?: OneOrMany<FacilitatorAfterVerifyHook>;
  readonly onVerifyFailure?: OneOrMany<FacilitatorOnVerifyFailureHook>;
  readonly onBeforeSettle?: OneOrMany<FacilitatorBeforeSettleHook>;
  readonly onAfterSettle?: OneOrMany<FacilitatorAfterSettleHook>;
  readonly onSettleFailure?: OneOrMany<FacilitatorOnSettleFailureHook>;
  /** Told when a hook throws. Default: the gateway's logger (error level). */
  readonly onHookError?: (hook: FacilitatorHookName, error: unknown) => void;
}

export type FacilitatorHookName = Exclude<keyof FacilitatorHooks, 'onHookError'>;

type SettleResult = SettleAnswer & { paymentId?: string };

/**
 * The facilitator with the operator's hooks around its verify and settle, and everything else its own.
 * Only the four entry points are wrapped, each calling the undecorated service, so a settle that goes
 * through `settlePayment` inside the service runs its hooks once.
 */
export function withFacilitatorHooks(
  service: FacilitatorService,
  hooks: FacilitatorHooks | undefined,
): FacilitatorService {
  if (hooks === undefined || !hasHooks(hooks)) return service;
  const report =
    hooks.onHookError ??
    ((hook, error) => console.error(`gate402: the facilitator's ${hook} hook failed`, error));
  const run = new FacilitatorHookRunner(hooks, (hook, error) => {
    try {
      report(hook, error);
    } catch {
      // A failing reporter changes nothing about the payment.
    }
  });
  const wrapped: Partial<FacilitatorService> = {
    verify: (paymentPayload, paymentRequirements) =>
      run.verify(contextOf(paymentPayload, paymentRequirements, 'facilitator'), () =>
        service.verify(paymentPayload, paymentRequirements),
      ),
    verifyPayment: (payment) => run.verify(contextOfPayment(payment), () => service.verifyPayment(payment)),
    settle: (paymentPayload, paymentRequirements, accountId) =>
      run.settle(
        { ...contextOf(paymentPayload, paymentRequirements, 'facilitator'), accountId },
        stringField(paymentRequirements, 'network'),
        () => service.settle(paymentPayload, paymentRequirements, accountId),
      ),
    settlePayment: (payment: X402Payment, asker: SettleAsker) =>
      run.settle({ ...contextOfPayment(payment), accountId: asker.accountId }, payment.networkAsSent, () =>
        service.settlePayment(payment, asker),
      ),
  };
  return new Proxy(service, {
    get(target, property, receiver) {
      if (Object.hasOwn(wrapped, property)) return wrapped[property as keyof typeof wrapped];
      const value: unknown = Reflect.get(target, property, receiver);
      // The service's own methods run on the service itself, never back through the hooks.
      return typeof value === 'function' ? (value as Observer).bind(target) : value;
    },
  });
}

class FacilitatorHookRunner {
  constructor(
    private readonly hooks: FacilitatorHooks,
    private readonly report: (hook: FacilitatorHookName, error: unknown) => void,
  ) {}

  async verify(context: FacilitatorHookContext, call: () => Promise<VerifyAnswer>): Promise<VerifyAnswer> {
    for (const hook of listOf(this.hooks.onBeforeVerify)) {
      let answer: unknown;
      try {
        answer = await hook(context);
      } catch (error) {
        this.report('onBeforeVerify', error);
        return {
          isValid: false,
          invalidReason: 'unexpected_verify_error',
          invalidMessage: 'the facilitator could not verify this payment (one of its hooks failed)',
        };
      }
      if (isAbort(answer)) {
        return {
          isValid: false,
          invalidReason: answer.reason,
          ...(answer.message === undefined ? {} : { invalidMessage: answer.message }),
        };
      }
    }
    let result: VerifyAnswer;
    try {
      result = await call();
      if (!result.isValid) {
        const reason = result.invalidReason ?? 'invalid_payment';
        result =
          ((await this.failure('onVerifyFailure', {
            ...context,
            error: new Error(result.invalidMessage ? `${reason}: ${result.invalidMessage}` : reason),
          })) as VerifyAnswer | undefined) ?? result;
      }
    } catch (error) {
      const recovered = await this.failure('onVerifyFailure', { ...context, error: asError(error) });
      if (recovered === undefined) throw error;
      result = recovered as VerifyAnswer;
    }
    if (result.isValid)
      await this.observe('onAfterVerify', listOf(this.hooks.onAfterVerify), { ...context, result });
    return result;
  }

  async settle(
    context: FacilitatorSettleHookContext,
    network: string,
    call: () => Promise<SettleResult>,
  ): Promise<SettleResult> {
    for (const hook of listOf(this.hooks.onBeforeSettle)) {
      let answer: unknown;
      try {
        answer = await hook(context);
      } catch (error) {
        this.report('onBeforeSettle', error);
        return {
          success: false,
          errorReason: 'unexpected_settle_error',
          errorMessage:
            'the facilitator did not settle this payment (one of its hooks failed); nothing was sent',
          transaction: '',
          network,
        };
      }
      if (isAbort(answer)) {
        return {
          success: false,
          errorReason: answer.reason,
          ...(answer.message === undefined ? {} : { errorMessage: answer.message }),
          transaction: '',
          network,
        };
      }
    }
    let result: SettleResult;
    try {
      result = await call();
    } catch (error) {
      const recovered = await this.failure('onSettleFailure', { ...context, error: asError(error) });
      if (recovered === undefined) throw error;
      return recovered as SettleResult;
    }
    if (!result.success) {
      const reason = result.errorReason ?? 'settle_failed';
      const recovered = await this.failure('onSettleFailure', {
        ...context,
        error: new Error(result.errorMessage ? `${reason}: ${result.errorMessage}` : reason),
      });
      return (recovered as SettleResult | undefined) ?? result;
    }
    await this.observe('onAfterSettle', listOf(this.hooks.onAfterSettle), { ...context, result });
    return result;
  }

  /** After-hooks: each runs; one that throws is reported, and the answer stands. */
  private async observe<C>(
    name: FacilitatorHookName,
    hooks: readonly ((context: C) => unknown)[],
    context: C,
  ) {
    for (const hook of hooks) {
      try {
        await hook(context);
      } catch (error) {
        this.report(name, error);
      }
    }
  }

  /** Failure hooks: the first recovery is the answer; one that throws is reported and skipped. */
  private async failure(
    name: 'onVerifyFailure' | 'onSettleFailure',
    context: FacilitatorVerifyFailureContext | FacilitatorSettleFailureContext,
  ): Promise<VerifyAnswer | SettleAnswer | undefined> {
    for (const hook of listOf(this.hooks[name])) {
      try {
        const answer = (await (hook as (context: unknown) => unknown)(context)) as
          | { recovered?: unknown; result?: VerifyAnswer | SettleAnswer }
          | undefined;
        if (answer?.recovered === true && answer.result !== undefined) return answer.result;
      } catch (error) {
        this.report(name, error);
      }
    }
    return undefined;
  }
}

function hasHooks(hooks: FacilitatorHooks): boolean {
  return (
    [
      hooks.onBeforeVerify,
      hooks.onAfterVerify,
      hooks.onVerifyFailure,
      hooks.onBeforeSettle,
      hooks.onAfterSettle,
      hooks.onSettleFailure,
    ] as const
  ).some((hook) => listOf<unknown>(hook).length > 0);
}

function contextOf(
  paymentPayload: unknown,
  requirements: unknown,
  via: FacilitatorHookContext['via'],
): FacilitatorHookContext {
  return { paymentPayload: recordOf(paymentPayload), requirements: recordOf(requirements), via };
}

/** A payment read from an X-PAYMENT / PAYMENT-SIGNATURE header, in x402's wire shape again. */
function contextOfPayment(payment: X402Payment): FacilitatorHookContext {
  const requirements = {
    scheme: payment.scheme,
    network: payment.networkAsSent,
    ...payment.requirements,
    amount: payment.requirements.amount.toString(),
  };
  return {
    paymentPayload:
      payment.x402Version === 2
        ? { x402Version: 2, accepted: requirements, payload: payment.payload }
        : {
            x402Version: 1,
            scheme: payment.scheme,
            network: payment.networkAsSent,
            payload: payment.payload,
          },
    requirements,
    via: 'receive',
  };
}

function recordOf(value: unknown): Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function stringField(value: unknown, field: string): string {
  const found = (recordOf(value) as Record<string, unknown>)[field];
  return typeof found === 'string' ? found : '';
}

function listOf<T>(value: OneOrMany<T> | undefined): readonly T[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? (value as readonly T[]) : [value as T];
}

function isAbort(value: unknown): value is FacilitatorAbort {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { abort?: unknown }).abort === true &&
    typeof (value as { reason?: unknown }).reason === 'string'
  );
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
