import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { GatewayError } from '../../domain/gateway-error.ts';
import { RATE_WINDOW_MS } from '../../domain/plan.ts';
import type { ApiKeyRecord } from '../../domain/records/account-records.ts';
import type { RateLimiter } from '../../ratelimit/rate-limiter.ts';
import type { AccountService } from '../../services/accounts/account-service.ts';
import type { AccountSummaryService } from '../../services/accounts/account-summary.ts';
import { SummaryQuery } from '../routes/account-summary.ts';
import { dashboardUserOf } from './dashboard-session.ts';

/** The account's plan and usage, and its API keys (spec §2.6 and §5: keys live in the dashboard). */
export async function dashboardAccountRoutes(
  app: FastifyInstance,
  opts: { accounts: AccountService; rateLimiter: RateLimiter; summary: AccountSummaryService },
) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { accounts } = opts;

  r.get('/account', { schema: { hide: true } }, async (request) => {
    const account = await accounts.getAccount(dashboardUserOf(request).accountId);
    // The same counter the API counts against, read without counting: the dashboard is not API use.
    const usage = await opts.rateLimiter.used(account.id).catch((error: unknown) => {
      throw new GatewayError('SERVICE_UNAVAILABLE', { message: 'Usage is unavailable.', cause: error });
    });
    return {
      id: account.id,
      name: account.name,
      plan: account.plan,
      rateLimit: account.rateLimit,
      windowSeconds: RATE_WINDOW_MS / 1000,
      used: usage.used,
      resetAt: usage.resetAt,
      createdAt: account.createdAt,
    };
  });

  r.get('/account/summary', { schema: { hide: true, querystring: SummaryQuery } }, async (request) =>
    opts.summary.summary(dashboardUserOf(request).accountId, request.query.days ?? 30),
  );

  r.get('/keys', { schema: { hide: true } }, async (request) => {
    const keys = await accounts.listKeys(dashboardUserOf(request).accountId);
    return { keys: keys.filter((k) => k.revokedAt === null).map(keyView) };
  });

  r.post(
    '/keys',
    {
      schema: {
        hide: true,
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 100 }),
            // The admin scope: the key may read and set spend policies. Only the owner's session gives it.
            admin: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => {
      const scopes = request.body.admin === true ? (['admin'] as const) : [];
      const created = await accounts.createKey(dashboardUserOf(request).accountId, request.body.name, scopes);
      return { ...keyView(created.record), key: created.key };
    },
  );

  r.delete(
    '/keys/:keyId',
    { schema: { hide: true, params: Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 100 }) }) } },
    async (request) => {
      const revoked = await accounts.revokeKey(request.params.keyId, dashboardUserOf(request).accountId);
      return { id: revoked.id, deleted: true };
    },
  );
}

/** A key as the dashboard shows it: never the secret, never its hash. */
function keyView(key: ApiKeyRecord) {
  return {
    id: key.id,
    name: key.name,
    prefix: key.displayPrefix,
    createdAt: key.createdAt,
    lastUsedAt: key.lastUsedAt,
    scopes: key.scopes,
  };
}
