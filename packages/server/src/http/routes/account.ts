import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { RATE_WINDOW_MS } from '../../domain/plan.ts';
import { callerOf } from '../plugins/authentication.ts';

const AccountSchema = Type.Object(
  {
    id: Type.String({ examples: ['acct_01JD0Q3ZK8M4F6X3V5N7R9T2AB'] }),
    name: Type.String(),
    plan: Type.Union([Type.Literal('standard'), Type.Literal('premium'), Type.Literal('enterprise')]),
    rateLimit: Type.Object({
      limit: Type.Integer({ description: 'Requests per window, over all keys of the account.' }),
      remaining: Type.Integer({ description: 'Requests left in the current window, after this one.' }),
      windowSeconds: Type.Integer(),
      resetAt: Type.Integer({ description: 'Unix ms when the current window ends.' }),
    }),
    createdAt: Type.Integer({ description: 'Unix ms.' }),
  },
  { $id: 'Account', title: 'Account' },
);

/** The caller's own account. */
export async function accountRoutes(app: FastifyInstance) {
  app.get(
    '/account',
    {
      config: { feature: 'account' },
      schema: {
        operationId: 'getAccount',
        summary: "The caller's account: plan, rate limit and requests remaining in the current window.",
        response: { 200: AccountSchema },
      },
    },
    async (request) => {
      const { account, rate } = callerOf(request);
      return {
        id: account.id,
        name: account.name,
        plan: account.plan,
        rateLimit: {
          limit: rate.limit,
          remaining: rate.remaining,
          windowSeconds: RATE_WINDOW_MS / 1000,
          resetAt: rate.resetAt,
        },
        createdAt: account.createdAt,
      };
    },
  );
}
