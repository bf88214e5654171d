import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { EVENT_TYPES } from '../../domain/payment-status.ts';
import type { WebhookService } from '../../events/webhooks/webhook-service.ts';
import { callerOf } from '../plugins/authentication.ts';

const EventType = Type.Union(
  EVENT_TYPES.map((t) => Type.Literal(t)),
  { description: 'A payment event type.' },
);

const WebhookSchema = Type.Object(
  {
    id: Type.String({ description: '`whk_…`' }),
    url: Type.String({
      description:
        'The URL as parsed, where deliveries go: e.g. `https://example.com` reads `https://example.com/`, spaces around it are dropped and characters a URL cannot carry are percent-encoded.',
    }),
    eventTypes: Type.Array(Type.String(), { description: 'Types delivered; empty: every type.' }),
    createdAt: Type.Integer({ description: 'Unix ms.' }),
    enabled: Type.Boolean({
      description:
        'False once the endpoint answered a delivery `410 Gone` (it asked to be unsubscribed) or its account disabled it: no deliveries are created for it and its pending ones are failed unsent. Enable it again with `PATCH /webhooks/{id}`.',
    }),
    disabledAt: Type.Union([Type.Integer(), Type.Null()], {
      description: 'Unix ms when it was disabled; null while enabled.',
    }),
    disabledReason: Type.Union([Type.String(), Type.Null()], {
      description:
        'Why it was disabled: `answered HTTP 410 Gone to delivery dlv_…` or `disabled by its account`; null while enabled.',
    }),
  },
  { $id: 'Webhook', title: 'Webhook' },
);

const DeliverySchema = Type.Object(
  {
    id: Type.String({ description: '`dlv_…`' }),
    eventId: Type.String({ description: 'The event delivered; also the `webhook-id` header.' }),
    status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]),
    attempts: Type.Integer(),
    nextAttemptAt: Type.Union([Type.Integer(), Type.Null()], {
      description: 'Unix ms; null when none is due.',
    }),
    lastStatusCode: Type.Union([Type.Integer(), Type.Null()], {
      description: 'HTTP status of the last attempt.',
    }),
    lastError: Type.Union([Type.String(), Type.Null()]),
    lastAttemptAt: Type.Union([Type.Integer(), Type.Null()]),
    deliveredAt: Type.Union([Type.Integer(), Type.Null()]),
    createdAt: Type.Integer(),
  },
  { $id: 'WebhookDelivery', title: 'WebhookDelivery' },
);

const WebhookId = Type.Object({ id: Type.String({ pattern: '^whk_[0-9A-Z]{26}$' }) });

/**
 * Webhook endpoints of the caller's account: each receives the account's payment events as signed
 * POSTs (Standard Webhooks), retried with back-off for at least 24 hours.
 */
export async function webhookRoutes(app: FastifyInstance, opts: { webhooks: WebhookService }) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/webhooks',
    {
      config: { feature: 'webhooks' },
      schema: {
        operationId: 'createWebhook',
        tags: ['webhooks'],
        summary:
          'Register an HTTPS endpoint for payment events. The answer carries the signing secret, once.',
        body: Type.Object(
          {
            url: Type.String({
              minLength: 1,
              maxLength: 2048,
              description: 'https:// URL on a public address.',
            }),
            eventTypes: Type.Optional(
              Type.Array(EventType, { maxItems: EVENT_TYPES.length, description: 'Omit for every type.' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Intersect([
            WebhookSchema,
            Type.Object({
              secret: Type.String({
                description:
                  'Standard Webhooks secret (`whsec_…`) to verify `webhook-signature`; shown only now.',
              }),
            }),
          ]),
        },
      },
    },
    async (request) =>
      opts.webhooks.create(callerOf(request).account.id, {
        url: request.body.url,
        ...(request.body.eventTypes === undefined ? {} : { eventTypes: request.body.eventTypes }),
      }),
  );

  r.get(
    '/webhooks',
    {
      config: { feature: 'webhooks' },
      schema: {
        operationId: 'listWebhooks',
        tags: ['webhooks'],
        summary: 'Your webhook endpoints (never their secrets).',
        response: { 200: Type.Object({ webhooks: Type.Array(WebhookSchema) }) },
      },
    },
    async (request) => ({ webhooks: await opts.webhooks.list(callerOf(request).account.id) }),
  );

  r.delete(
    '/webhooks/:id',
    {
      config: { feature: 'webhooks' },
      schema: {
        operationId: 'deleteWebhook',
        tags: ['webhooks'],
        summary: 'Delete an endpoint and its delivery log; nothing more is sent to it.',
        params: WebhookId,
        response: { 200: Type.Object({ id: Type.String(), deleted: Type.Literal(true) }) },
      },
    },
    async (request) => {
      await opts.webhooks.delete(callerOf(request).account.id, request.params.id);
      return { id: request.params.id, deleted: true as const };
    },
  );

  r.patch(
    '/webhooks/:id',
    {
      config: { feature: 'webhooks' },
      schema: {
        operationId: 'updateWebhook',
        tags: ['webhooks'],
        summary:
          'Enable an endpoint again (e.g. after it answered 410 Gone), or disable it. Enabled again, it receives the events written from then on; none that happened while it was disabled (redeliver one by hand if needed).',
        params: WebhookId,
        body: Type.Object(
          {
            enabled: Type.Boolean({
              description:
                'true: deliver to it again; false: stop (its pending deliveries are failed). Asking for the state it is in changes nothing.',
            }),
          },
          { additionalProperties: false },
        ),
        response: { 200: WebhookSchema },
      },
    },
    async (request) =>
      opts.webhooks.update(callerOf(request).account.id, request.params.id, {
        enabled: request.body.enabled,
      }),
  );

  r.get(
    '/webhooks/:id/deliveries',
    {
      config: { feature: 'webhooks' },
      schema: {
        operationId: 'listWebhookDeliveries',
        tags: ['webhooks'],
        summary: "The endpoint's delivery log, newest event first.",
        params: WebhookId,
        querystring: Type.Object(
          { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ deliveries: Type.Array(DeliverySchema) }) },
      },
    },
    async (request) => ({
      deliveries: await opts.webhooks.deliveries(
        callerOf(request).account.id,
        request.params.id,
        request.query.limit ?? 50,
      ),
    }),
  );

  r.post(
    '/webhooks/:id/deliveries/:deliveryId/redeliver',
    {
      config: { feature: 'webhooks' },
      schema: {
        operationId: 'redeliverWebhookDelivery',
        tags: ['webhooks'],
        summary:
          'Send a delivery again now, whatever its status (same event id, fresh signature). Refused with 400 while the endpoint is disabled: enable it first.',
        params: Type.Object({
          id: Type.String({ pattern: '^whk_[0-9A-Z]{26}$' }),
          deliveryId: Type.String({ pattern: '^dlv_[0-9A-Z]{26}$' }),
        }),
        response: { 200: DeliverySchema },
      },
    },
    async (request) =>
      opts.webhooks.redeliver(callerOf(request).account.id, request.params.id, request.params.deliveryId),
  );
}
