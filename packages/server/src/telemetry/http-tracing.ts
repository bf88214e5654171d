import type { FastifyInstance } from 'fastify';
import { tracer } from './tracing.ts';

/**
 * One span per request (tracing-sdk.ts's hooks), when tracing is on; nothing at all when off. Called
 * before any route is registered, so every route's handler runs in its request's span.
 */
export function installHttpTracing(app: FastifyInstance): void {
  const hooks = tracer().http;
  if (hooks === undefined) return;
  app.addHook('onRoute', hooks.onRoute);
  app.addHook('onRequest', hooks.onRequest);
  app.addHook('onResponse', hooks.onResponse);
  app.addHook('onRequestAbort', hooks.onRequestAbort);
}
