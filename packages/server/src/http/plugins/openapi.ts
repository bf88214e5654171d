import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import { Type } from 'typebox';
import { ERROR_CATALOGUE } from '../../domain/error-catalogue.ts';
import { GATE402_ICON_SVG, GATE402_LOGO_SVG } from './gate402-logo.ts';

export const ErrorBodySchema = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Type.String({ enum: Object.keys(ERROR_CATALOGUE), description: 'Machine code (spec §7).' }),
      message: Type.String({ description: 'Human-readable text.' }),
      details: Type.Optional(
        Type.Record(Type.String(), Type.String(), { description: 'Field name → the rule it breaks.' }),
      ),
      retryAfter: Type.Optional(Type.Integer({ description: 'Seconds to wait (rate limits).' })),
      requestId: Type.Optional(Type.String({ description: 'Quote it when reporting a problem.' })),
    }),
  },
  { $id: 'ErrorBody', title: 'Error' },
);

const ERROR_RESPONSES: Record<number, string> = {
  400: 'INVALID_PARAMETERS: a parameter breaks its rule; `details` names each field.',
  401: 'UNAUTHORIZED: API key missing or invalid.',
  403: 'FORBIDDEN: the plan does not include this endpoint.',
  413: 'PAYLOAD_TOO_LARGE: body over the configured limit.',
  415: 'UNSUPPORTED_MEDIA_TYPE: body is not JSON.',
  429: 'RATE_LIMIT_EXCEEDED: see `retryAfter` and the Retry-After header.',
  500: 'INTERNAL_ERROR: quote `requestId` when reporting it.',
};

/**
 * OpenAPI 3.1 generated from the route schemas at GET /openapi.json, and the Swagger UI, served from
 * this process with no outside scripts, at GET /docs. Authenticated routes get the security scheme and
 * the common error responses added as they are registered, so a new route is documented by construction.
 * Every documented route sets `schema.operationId` (camelCase, verb first: `sendPayment`): generated
 * clients take their method names from it, so it never changes once published; test/openapi.test.ts
 * lists them all, so a new route without one fails there.
 */
export async function installOpenApi(app: FastifyInstance, version: string): Promise<void> {
  app.addSchema(ErrorBodySchema);
  app.addHook('onRoute', documentRoute);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'gate402',
        version,
        description:
          'Self-hostable payment gateway for the x402 protocol. Every error answers `{success:false, error:{code, message, details?, retryAfter?}}`. The WebSocket payment stream at /v1/payments/stream is described in AsyncAPI 3.0 at /asyncapi.json.',
      },
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key: `Authorization: Bearer g402_sk_…`',
          },
          metricsToken: {
            type: 'http',
            scheme: 'bearer',
            description: 'The METRICS_TOKEN setting, for GET /metrics only (served only when it is set).',
          },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: ({ schema, url }) => ({ schema: withDefaultedQueryOptional(schema), url }),
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { validatorUrl: null, deepLinking: true },
    staticCSP: true,
    // gate402's own name and mark, not the documentation tool's.
    logo: { type: 'image/svg+xml', content: Buffer.from(GATE402_LOGO_SVG), href: '/docs', target: '_self' },
    theme: {
      title: `gate402 ${version} API`,
      favicon: [
        {
          filename: 'gate402.svg',
          rel: 'icon',
          sizes: 'any',
          type: 'image/svg+xml',
          content: Buffer.from(GATE402_ICON_SVG),
        },
      ],
    },
  });
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
}

/**
 * A query parameter with a `default` is filled in by validation (useDefaults) before the handler runs,
 * so the handler's type may count on it while the caller may leave it out: the document says it is
 * optional and shows the default. The route's own schema object, which the validator uses, is not touched.
 */
function withDefaultedQueryOptional(schema: FastifySchema): FastifySchema {
  const query = schema?.querystring as
    | { properties?: Record<string, { default?: unknown }>; required?: string[] }
    | undefined;
  if (query?.properties === undefined || query.required === undefined) return schema;
  const properties = query.properties;
  const required = query.required.filter((name) => properties[name]?.default === undefined);
  if (required.length === query.required.length) return schema;
  return { ...schema, querystring: { ...query, required } };
}

function documentRoute(route: RouteOptions): void {
  const feature = route.config?.feature;
  if (feature === undefined) return;
  route.schema ??= {};
  const schema = route.schema as Record<string, unknown>;
  // A key-optional route (the x402 bazaar's public listing) may be called without one: `{}` says so.
  schema.security = route.config?.keyOptional === true ? [{ bearerAuth: [] }, {}] : [{ bearerAuth: [] }];
  const tags = (schema.tags as string[] | undefined) ?? [feature];
  schema.tags = tags;
  schema.response ??= {};
  const responses = schema.response as Record<string, unknown>;
  for (const [status, description] of Object.entries(ERROR_RESPONSES)) {
    if (status === '413' || status === '415') {
      if (route.method === 'GET' || (Array.isArray(route.method) && route.method.includes('GET'))) continue;
    }
    responses[status] ??= {
      description,
      content: { 'application/json': { schema: { $ref: 'ErrorBody#' } } },
    };
  }
}
