import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { type AccountSummaryService, SUMMARY_MAX_DAYS } from '../../services/accounts/account-summary.ts';
import { callerOf } from '../plugins/authentication.ts';

const Amount = {
  amount: Type.String({ description: "Whole units of the asset, exact decimal text (e.g. '12.5')." }),
  atomic: Type.String({ description: 'Atomic units (lamports, wei, token base units), exact decimal text.' }),
};
const Flow = Type.Object({ ...Amount, count: Type.Integer({ description: 'Paid payments counted.' }) });
const Flows = {
  received: Type.Object(Flow.properties, { description: 'Every paid payment in.' }),
  sent: Type.Object(Flow.properties, { description: 'Paid payments out, refunds apart.' }),
  refunded: Type.Object(Flow.properties, {
    description: 'Paid refunds: money given back to the payers of received payments.',
  }),
};
const AssetName = {
  network: Type.String(),
  asset: Type.Union([Type.String(), Type.Null()], {
    description: "The token's mint (Solana) or contract (EVM); null: the network's native currency.",
  }),
  symbol: Type.Union([Type.String(), Type.Null()], {
    description: 'Its symbol when the network lists it (GET /networks); null otherwise.',
  }),
  decimals: Type.Integer(),
};

export const AccountSummarySchema = Type.Object(
  {
    from: Type.Integer({ description: 'Unix ms: the start of the first UTC day counted.' }),
    to: Type.Integer({ description: 'Unix ms: when the summary was made.' }),
    days: Type.Integer(),
    assets: Type.Array(Type.Object({ ...AssetName, ...Flows }), {
      description:
        'Totals per network and asset over the window; the native currency first within a network.',
    }),
    daily: Type.Array(
      Type.Object({
        date: Type.String({ description: 'The UTC day, YYYY-MM-DD.' }),
        ...AssetName,
        ...Flows,
      }),
      { description: 'Per UTC day and asset, only days with a paid payment, oldest first.' },
    ),
    topResources: Type.Array(
      Type.Object({
        resource: Type.String(),
        ...AssetName,
        ...Amount,
        count: Type.Integer({ description: 'Paid sales of the resource.' }),
        refunded: Type.String({
          description:
            'Whole units refunded of those sales (exact decimal text), already taken off `amount`.',
        }),
      }),
      {
        description:
          'The ten resources that earned most in each asset, highest first: paid received payments naming the resource, less what was refunded of them.',
      },
    ),
  },
  { $id: 'AccountSummary', title: 'AccountSummary' },
);

export const SummaryQuery = Type.Object(
  {
    days: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: SUMMARY_MAX_DAYS,
        default: 30,
        description: `UTC days counted, today included (1–${SUMMARY_MAX_DAYS}; default 30).`,
      }),
    ),
  },
  { additionalProperties: false },
);

/** GET /account/summary: what the caller's account's payments added up to lately. */
export async function accountSummaryRoutes(app: FastifyInstance, deps: { summary: AccountSummaryService }) {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/account/summary',
    {
      config: { feature: 'account' },
      schema: {
        operationId: 'getAccountSummary',
        summary:
          "What the caller's account's payments added up to lately: volume per day and asset, totals, top resources.",
        description:
          "Counts confirmed and finalized payments only (a payment reorganised out of the chain drops out), created in the last `days` UTC days. Amounts are exact: whole units with the asset's symbol and atomic units.",
        querystring: SummaryQuery,
        response: { 200: AccountSummarySchema },
      },
    },
    async (request) => deps.summary.summary(callerOf(request).account.id, request.query.days ?? 30),
  );
}
