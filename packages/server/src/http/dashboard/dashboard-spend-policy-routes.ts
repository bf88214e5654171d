import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { SpendPolicyInput, SpendPolicyService } from '../../services/spending/spend-policy-service.ts';
import { dashboardUserOf } from './dashboard-session.ts';

const Amount = Type.Union([Type.String({ maxLength: 100 }), Type.Null()]);
const Limit = Type.Object(
  {
    network: Type.String({ maxLength: 100 }),
    asset: Type.Optional(Type.String({ maxLength: 100 })),
    maxPerPayment: Type.Optional(Amount),
    maxPerDay: Type.Optional(Amount),
  },
  { additionalProperties: false },
);
const KeyParams = Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 100 }) });
/** Checked field by field by SpendPolicyService, which names each bad field; here only its shape. */
const PolicyBody = Type.Object(
  {
    limits: Type.Optional(Type.Union([Type.Array(Limit, { maxItems: 50 }), Type.Null()])),
    allowedRecipients: Type.Optional(Type.Union([Type.Array(Type.String(), { maxItems: 200 }), Type.Null()])),
    allowedHosts: Type.Optional(Type.Union([Type.Array(Type.String(), { maxItems: 200 }), Type.Null()])),
    allowedNetworks: Type.Optional(Type.Union([Type.Array(Type.String(), { maxItems: 200 }), Type.Null()])),
    expiresAt: Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Null()])),
  },
  { additionalProperties: false },
);

/**
 * Spend policies from the account owner's session (docs/spend-policies.md): the same service as the
 * admin-scoped API routes, for the session's account only; a key of another account is NOT_FOUND.
 */
export async function dashboardSpendPolicyRoutes(
  app: FastifyInstance,
  opts: { spendPolicies: SpendPolicyService },
) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const policies = opts.spendPolicies;
  const accountOf = (request: Parameters<typeof dashboardUserOf>[0]) => dashboardUserOf(request).accountId;

  r.get('/spend-policies', { schema: { hide: true } }, async (request) => ({
    policies: await policies.list(accountOf(request)),
  }));
  r.put('/spend-policies/account', { schema: { hide: true, body: PolicyBody } }, async (request) =>
    policies.set(accountOf(request), null, request.body satisfies SpendPolicyInput),
  );
  r.delete('/spend-policies/account', { schema: { hide: true } }, async (request) => {
    await policies.remove(accountOf(request), null);
    return { deleted: true };
  });
  r.put(
    '/spend-policies/keys/:keyId',
    { schema: { hide: true, params: KeyParams, body: PolicyBody } },
    async (request) =>
      policies.set(accountOf(request), request.params.keyId, request.body satisfies SpendPolicyInput),
  );
  r.delete('/spend-policies/keys/:keyId', { schema: { hide: true, params: KeyParams } }, async (request) => {
    await policies.remove(accountOf(request), request.params.keyId);
    return { deleted: true };
  });
}
