import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  SpanKind as OtelSpanKind,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { GATE402_VERSION } from '../version.ts';
import {
  type ActiveSpan,
  type HttpTracingHooks,
  NO_TRACING,
  PAYMENT_ID_ATTRIBUTE,
  type SpanKind,
  setTracer,
  type Tracer,
} from './tracing.ts';
import type { TraceExporterName } from './tracing-settings.ts';

// The SDK side of tracing.ts, loaded by a dynamic import only when tracing is on.

const TRACER_NAME = 'gate402';
const KINDS: Record<SpanKind, OtelSpanKind> = {
  internal: OtelSpanKind.INTERNAL,
  server: OtelSpanKind.SERVER,
  client: OtelSpanKind.CLIENT,
};

/** The request's span, so work deep inside the request can name its payment on it. */
const REQUEST_SPAN = createContextKey('gate402.request-span');
/** The payment named so far under this request (or job step): shared, so later spans carry it too. */
const PAYMENT = createContextKey('gate402.payment');

interface PaymentHolder {
  id: string | undefined;
}

export interface Tracing {
  /** Sends what is buffered. */
  forceFlush(): Promise<void>;
  /** Sends what is buffered and turns tracing off (the hook points call straight through again). */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /** Where spans go: the OTLP exporter in production, an InMemorySpanExporter in tests. */
  readonly exporter: SpanExporter;
  /** Batch spans before exporting (production); false: each span as it ends (tests). Default true. */
  readonly batch?: boolean;
  /** OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read from here; default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The exporter the OTEL_* settings name; the OTLP one reads its endpoint, headers and timeout itself. */
export function exporterNamed(name: TraceExporterName): SpanExporter {
  return name === 'otlp' ? new OTLPTraceExporter() : new ConsoleSpanExporter();
}

/**
 * Starts tracing with the official SDK: a NodeTracerProvider (AsyncLocalStorage context, W3C trace
 * context and baggage propagation) whose spans go to `exporter`, with the service's resource (name
 * gate402 unless OTEL_SERVICE_NAME says otherwise, version, OTEL_RESOURCE_ATTRIBUTES). The sampler is
 * the SDK's default as OTEL_TRACES_SAMPLER sets it.
 */
export function startTracing(options: TracingOptions): Tracing {
  const env = options.env ?? process.env;
  const fromEnv = detectResources({ detectors: [envDetector] });
  const resource = resourceFromAttributes({
    [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME?.trim() || 'gate402',
    [ATTR_SERVICE_VERSION]: GATE402_VERSION,
  }).merge(fromEnv);
  const processor =
    options.batch === false
      ? new SimpleSpanProcessor(options.exporter)
      : new BatchSpanProcessor(options.exporter);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  provider.register();
  const otel = provider.getTracer(TRACER_NAME, GATE402_VERSION);
  setTracer(sdkTracer(otel));
  return {
    forceFlush: () => provider.forceFlush(),
    shutdown: async () => {
      setTracer(NO_TRACING);
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        context.disable();
        propagation.disable();
      }
    },
  };
}

function sdkTracer(otel: ReturnType<NodeTracerProvider['getTracer']>): Tracer {
  const run = <T>(span: Span, work: (span: ActiveSpan) => Promise<T>): Promise<T> =>
    work(activeSpan(span)).then(
      (result) => {
        span.end();
        return result;
      },
      (error: unknown) => {
        fail(span, error);
        span.end();
        throw error;
      },
    );
  return {
    enabled: true,
    inSpan(name, kind, attributes, work) {
      const parent = context.active();
      const span = otel.startSpan(name, { kind: KINDS[kind], attributes }, parent);
      let holder = parent.getValue(PAYMENT) as PaymentHolder | undefined;
      let ctx = trace.setSpan(parent, span);
      if (holder === undefined) {
        holder = { id: undefined };
        ctx = ctx.setValue(PAYMENT, holder);
      }
      if (holder.id !== undefined) span.setAttribute(PAYMENT_ID_ATTRIBUTE, holder.id);
      return context.with(ctx, () => run(span, work));
    },
    bind(fn) {
      return context.bind(context.active(), fn);
    },
    inject(headers) {
      propagation.inject(context.active(), headers);
    },
    notePayment(paymentId) {
      const active = context.active();
      const holder = active.getValue(PAYMENT) as PaymentHolder | undefined;
      if (holder !== undefined) holder.id ??= paymentId;
      trace.getSpan(active)?.setAttribute(PAYMENT_ID_ATTRIBUTE, paymentId);
      const request = active.getValue(REQUEST_SPAN) as Span | undefined;
      // The request's span names the first payment it touched (a refund's original, not the refund).
      if (request !== undefined && holder?.id === paymentId)
        request.setAttribute(PAYMENT_ID_ATTRIBUTE, paymentId);
    },
    http: httpHooks(otel),
  };
}

function activeSpan(span: Span): ActiveSpan {
  return {
    setAttribute: (key, value) => {
      span.setAttribute(key, value);
    },
    fail: (error) => fail(span, error),
  };
}

/**
 * A failed span says what kind of error it was (its class or code), never its message: messages can
 * carry what spans must not (an RPC URL with its key in the query, a caller's input).
 */
function fail(span: Span, error: unknown): void {
  const type =
    (error as { code?: unknown } | null)?.code !== undefined &&
    typeof (error as { code: unknown }).code === 'string'
      ? (error as { code: string }).code
      : error instanceof Error
        ? error.name
        : typeof error;
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/**
 * One SERVER span per request, named by its route template (`GET /payment/status/:paymentId`, never
 * the path with its values), continuing the caller's W3C trace context when it sends one. Its
 * attributes are the method, route, status and request id: no header (Authorization carries the API
 * key, cookies the session), no query string, no body. The handler runs inside the span's context (the
 * body is read in the socket's, which would lose it), so storage and RPC spans of the request are its
 * children.
 */
function httpHooks(otel: ReturnType<NodeTracerProvider['getTracer']>): HttpTracingHooks {
  const spans = new WeakMap<FastifyRequest, { span: Span; ctx: Context }>();
  const end = (request: FastifyRequest, reply: FastifyReply | undefined, aborted: boolean) => {
    const entry = spans.get(request);
    if (entry === undefined) return;
    spans.delete(request);
    const { span } = entry;
    if (aborted) span.setAttribute('gate402.request.aborted', true);
    if (reply !== undefined) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    }
    const paymentId = (request.params as { paymentId?: unknown } | undefined)?.paymentId;
    if (typeof paymentId === 'string' && /^pay_[0-9A-Z]{26}$/.test(paymentId)) {
      span.setAttribute(PAYMENT_ID_ATTRIBUTE, paymentId);
    }
    span.end();
  };
  return {
    onRoute(route: RouteOptions) {
      const handler = route.handler;
      route.handler = function traced(this: unknown, request, reply) {
        const ctx = spans.get(request)?.ctx;
        return ctx === undefined
          ? handler.call(this as never, request, reply)
          : context.with(ctx, () => handler.call(this as never, request, reply));
      } as typeof handler;
    },
    onRequest(request, _reply, done) {
      const route = request.routeOptions.url;
      const attributes: Attributes = {
        'http.request.method': request.method,
        'url.scheme': request.protocol,
        'gate402.request.id': request.id,
      };
      if (route !== undefined) attributes['http.route'] = route;
      const parent = propagation.extract(ROOT_CONTEXT, request.headers);
      const span = otel.startSpan(
        `${request.method} ${route ?? '(no route)'}`,
        { kind: OtelSpanKind.SERVER, attributes },
        parent,
      );
      const ctx = trace
        .setSpan(parent, span)
        .setValue(REQUEST_SPAN, span)
        .setValue(PAYMENT, { id: undefined } satisfies PaymentHolder);
      spans.set(request, { span, ctx });
      context.with(ctx, done);
    },
    onResponse(request, reply, done) {
      end(request, reply, false);
      done();
    },
    onRequestAbort(request, done) {
      end(request, undefined, true);
      done();
    },
  };
}
