import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { EVENT_TYPES } from '../../domain/payment-status.ts';
import type { WebhookService } from '../../events/webhooks/webhook-service.ts';
import { dashboardUserOf } from './dashboard-session.ts';

const Id = Type.String({ minLength: 1, maxLength: 100 });

/**
 * Webhook endpoints (enabling one again), their delivery logs and redelivery: the same service as
 * /webhooks in the API.
 */
export async function dashboardWebhookRoutes(app: FastifyInstance, opts: { webhooks: WebhookService }) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { webhooks } = opts;

  r.get('/webhooks', { schema: { hide: true } }, async (request) => ({
    webhooks: await webhooks.list(dashboardUserOf(request).accountId),
    eventTypes: EVENT_TYPES,
  }));

  r.post(
    '/webhooks',
    {
      schema: {
        hide: true,
        body: Type.Object(
          {
            url: Type.String({ minLength: 1, maxLength: 2048 }),
            eventTypes: Type.Optional(
              Type.Array(Type.Union(EVENT_TYPES.map((t) => Type.Literal(t))), {
                maxItems: EVENT_TYPES.length,
              }),
            ),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => webhooks.create(dashboardUserOf(request).accountId, request.body),
  );

  r.delete('/webhooks/:id', { schema: { hide: true, params: Type.Object({ id: Id }) } }, async (request) => {
    await webhooks.delete(dashboardUserOf(request).accountId, request.params.id);
    return { id: request.params.id, deleted: true };
  });

  r.patch(
    '/webhooks/:id',
    {
      schema: {
        hide: true,
        params: Type.Object({ id: Id }),
        body: Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false }),
      },
    },
    async (request) =>
      webhooks.update(dashboardUserOf(request).accountId, request.params.id, {
        enabled: request.body.enabled,
      }),
  );

  r.get(
    '/webhooks/:id/deliveries',
    { schema: { hide: true, params: Type.Object({ id: Id }) } },
    async (request) => ({
      deliveries: await webhooks.deliveries(dashboardUserOf(request).accountId, request.params.id, 50),
    }),
  );

  r.post(
    '/webhooks/:id/deliveries/:deliveryId/redeliver',
    { schema: { hide: true, params: Type.Object({ id: Id, deliveryId: Id }) } },
    async (request) =>
      webhooks.redeliver(dashboardUserOf(request).accountId, request.params.id, request.params.deliveryId),
  );
}
