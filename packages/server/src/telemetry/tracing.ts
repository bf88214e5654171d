/**
 * OpenTelemetry tracing, off by default. The gateway's hook points (HTTP requests, chain RPC calls,
 * storage transactions, webhook deliveries) call `withSpan` and friends here, which do nothing but call
 * through while tracing is off: no OpenTelemetry module is loaded then (not even the API), so a gateway
 * that does not trace pays one function call per hook. `startTracing` (tracing-sdk.ts, imported only
 * when the OTEL_* settings ask for traces) installs the real implementation.
 */

import type {
  onRequestAbortHookHandler,
  onRequestHookHandler,
  onResponseHookHandler,
  onRouteHookHandler,
} from 'fastify';

export type SpanKind = 'internal' | 'server' | 'client';
export type SpanAttributes = Record<string, string | number | boolean>;

/** A span being recorded, as the hook points use it. */
export interface ActiveSpan {
  setAttribute(key: string, value: string | number | boolean): void;
  /** Marks the span failed with this error (its type and message; never a request's secrets). */
  fail(error: unknown): void;
}

/** What tracing does for the hook points; the off implementation is NO_TRACING. */
export interface Tracer {
  readonly enabled: boolean;
  /** Runs `work` in a span, child of the current one, ended when `work` settles. */
  inSpan<T>(
    name: string,
    kind: SpanKind,
    attributes: SpanAttributes,
    work: (span: ActiveSpan) => Promise<T>,
  ): Promise<T>;
  /**
   * `fn`, run in the current span's context wherever it is called from: for work handed to another
   * async context (SQLite's group commit runs a transaction's work in the batch's).
   */
  bind<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
  /** Adds the W3C trace context of the current span (traceparent, tracestate) to outgoing `headers`. */
  inject(headers: Record<string, string>): void;
  /**
   * Names the payment the current work is about: on the current span, on the request's span, and on
   * every span started after it under the same request (or job step).
   */
  notePayment(paymentId: string): void;
  /** Fastify hooks that make one span per request (http-tracing.ts installs them); absent when off. */
  readonly http?: HttpTracingHooks;
}

export interface HttpTracingHooks {
  readonly onRoute: onRouteHookHandler;
  readonly onRequest: onRequestHookHandler;
  readonly onResponse: onResponseHookHandler;
  readonly onRequestAbort: onRequestAbortHookHandler;
}

const NO_SPAN: ActiveSpan = { setAttribute: () => {}, fail: () => {} };

export const NO_TRACING: Tracer = {
  enabled: false,
  inSpan: (_name, _kind, _attributes, work) => work(NO_SPAN),
  inject: () => {},
  notePayment: () => {},
  bind: (fn) => fn,
};

let current: Tracer = NO_TRACING;

/** The tracer the hook points use: NO_TRACING until tracing is started. */
export function tracer(): Tracer {
  return current;
}

/** Installs `next` (startTracing does); `NO_TRACING` turns tracing off again. */
export function setTracer(next: Tracer): void {
  current = next;
}

/** Runs `work` in a span when tracing is on; else just runs it. */
export function withSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: SpanAttributes,
  work: (span: ActiveSpan) => Promise<T>,
): Promise<T> {
  return current.inSpan(name, kind, attributes, work);
}

/** The payment id attribute every span that knows its payment carries. */
export const PAYMENT_ID_ATTRIBUTE = 'gate402.payment.id';
