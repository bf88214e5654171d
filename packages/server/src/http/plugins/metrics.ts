import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { GatewayError } from '../../domain/gateway-error.ts';
import type { GatewayMetrics } from '../../metrics/gateway-metrics.ts';
import { sendError } from './errors.ts';

const BEARER = /^Bearer +(\S+)$/i;
/** Requests no route matched: counted under one label, so random URLs cannot grow the series. */
const UNMATCHED_ROUTE = 'unmatched';

/**
 * GET /metrics (Prometheus text format) behind its own bearer token (METRICS_TOKEN), not an API key:
 * a scraper is not a customer account. Every request is timed in a callback onResponse hook, by its
 * route pattern (`/payment/status/:paymentId`, never the raw URL, so ids do not become series).
 */
export function installMetrics(app: FastifyInstance, options: { metrics: GatewayMetrics; token: string }) {
  const { metrics } = options;
  const expected = digest(options.token);

  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(
      request.method,
      request.routeOptions.url ?? UNMATCHED_ROUTE,
      reply.statusCode,
      reply.elapsedTime / 1_000,
    );
    done();
  });

  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'getMetrics',
        tags: ['health'],
        summary: 'Prometheus metrics (text format 0.0.4); needs `Authorization: Bearer <METRICS_TOKEN>`.',
        security: [{ metricsToken: [] }],
        response: { 200: Type.String({ description: 'Prometheus text exposition format' }) },
      },
    },
    async (request, reply) => {
      const presented = BEARER.exec(request.headers.authorization ?? '')?.[1];
      // Compared as digests, in constant time, so the answer time says nothing about the token.
      if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
        reply.header('www-authenticate', 'Bearer realm="gate402-metrics"');
        return sendError(
          reply,
          request,
          new GatewayError('UNAUTHORIZED', { message: 'Metrics token missing or invalid.' }),
        );
      }
      const { contentType, body } = await metrics.render();
      return reply.type(contentType).send(body);
    },
  );
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
