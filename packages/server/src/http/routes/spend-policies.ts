import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import {
  MAX_POLICY_LIMITS,
  MAX_POLICY_LIST_ENTRIES,
  type SpendPolicyService,
} from '../../services/spending/spend-policy-service.ts';
import { callerOf } from '../plugins/authentication.ts';

const Amount = Type.String({
  pattern: '^\\s*\\d+(\\.\\d+)?\\s*$',
  maxLength: 100,
  description: "Decimal text in the asset's units (`2.5` USDC), converted exactly.",
});

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T, description: string) =>
  Type.Optional(Type.Union([schema, Type.Null()], { description }));

const SpendPolicyBody = Type.Object(
  {
    limits: Nullable(
      Type.Array(
        Type.Object(
          {
            network: Type.String({ maxLength: 100, description: 'A network id GET /networks lists.' }),
            asset: Type.Optional(
              Type.String({
                maxLength: 100,
                description:
                  'A symbol GET /networks lists for the network (`USDC`, `SOL`) or a token address; absent: the native currency.',
              }),
            ),
            maxPerPayment: Nullable(Amount, 'The most one payment may move; absent or null: no cap.'),
            maxPerDay: Nullable(
              Amount,
              'The most all payments may move over any rolling 24 hours (failed, expired and reverted ones do not count); absent or null: no cap.',
            ),
          },
          { additionalProperties: false },
        ),
        { maxItems: MAX_POLICY_LIMITS },
      ),
      'Caps per asset. Absent or null: no caps, every asset. A list (even empty): only the assets it names may be spent.',
    ),
    allowedRecipients: Nullable(
      Type.Array(Type.String({ maxLength: 100 }), { maxItems: MAX_POLICY_LIST_ENTRIES }),
      'Only these addresses may be paid (EVM addresses in any letter case). Absent or null: any recipient.',
    ),
    allowedHosts: Nullable(
      Type.Array(Type.String({ maxLength: 253 }), { maxItems: MAX_POLICY_LIST_ENTRIES }),
      "Only payments whose `resource` is an http(s) URL on one of these hosts (`*.example.com`: its subdomains). The resource is what the request says, so this bounds no payee by itself: a payment whose recipient the request names (a send, POST /payment/x402) is refused unless this policy's `allowedRecipients` lists the recipient too; a refund (its recipient is the payer the gateway recorded) needs no such list. Absent or null: any resource, or none.",
    ),
    allowedNetworks: Nullable(
      Type.Array(Type.String({ maxLength: 100 }), { maxItems: MAX_POLICY_LIST_ENTRIES }),
      'Only payments on these networks. Absent or null: every network.',
    ),
    expiresAt: Nullable(
      Type.String({ maxLength: 40 }),
      'ISO 8601 date-time from which the policy allows no payment at all. Absent or null: never.',
    ),
  },
  { additionalProperties: false, $id: 'SpendPolicyInput', title: 'SpendPolicyInput' },
);

const Strings = Type.Union([Type.Array(Type.String()), Type.Null()]);

const SpendPolicySchema = Type.Object(
  {
    scope: Type.Union([Type.Literal('account'), Type.Literal('key')], {
      description: '`account`: binds every payment of the account; `key`: binds those of `keyId`, on top.',
    }),
    keyId: Type.Union([Type.String(), Type.Null()]),
    limits: Type.Union([
      Type.Array(
        Type.Object({
          network: Type.String(),
          asset: Type.String({ description: 'The symbol, or the token address when it has none.' }),
          assetAddress: Type.Union([Type.String(), Type.Null()], {
            description: 'Null: the native currency.',
          }),
          decimals: Type.Integer(),
          maxPerPayment: Type.Union([Type.String(), Type.Null()]),
          maxPerDay: Type.Union([Type.String(), Type.Null()]),
        }),
      ),
      Type.Null(),
    ]),
    allowedRecipients: Strings,
    allowedHosts: Strings,
    allowedNetworks: Strings,
    expiresAt: Type.Union([Type.String(), Type.Null()]),
    updatedAt: Type.Integer({ description: 'Unix ms.' }),
  },
  { $id: 'SpendPolicy', title: 'SpendPolicy' },
);

const EffectivePolicy = Type.Object({
  policies: Type.Array(SpendPolicySchema, {
    description: "The account's policy and the calling key's, those that are set.",
  }),
  daily: Type.Array(
    Type.Object({
      scope: Type.Union([Type.Literal('account'), Type.Literal('key')]),
      network: Type.String(),
      asset: Type.String(),
      maxPerDay: Type.String(),
      spent: Type.String({ description: 'Counted in the last 24 hours.' }),
      remaining: Type.String(),
    }),
    { description: 'Each daily cap that binds the key, with what it has left now.' },
  ),
});

const KeyParams = Type.Object({ keyId: Type.String({ pattern: '^key_[0-9A-Z]{26}$' }) });
const Deleted = Type.Object({ deleted: Type.Literal(true) });

const ADMIN_ONLY =
  'Needs an API key with the `admin` scope (created with `gate402 keys create --admin` or in the dashboard).';

/**
 * Spend policies (services/spending/): any key reads what binds it (GET /spend-policy); only a key
 * with the `admin` scope reads and sets the account's policies, checked by the access policy at the door
 * (`config.scope`), so an agent given an ordinary key cannot lift its own limits.
 */
export async function spendPolicyRoutes(app: FastifyInstance, opts: { spendPolicies: SpendPolicyService }) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const policies = opts.spendPolicies;

  r.get(
    '/spend-policy',
    {
      config: { feature: 'account' },
      schema: {
        operationId: 'getOwnSpendPolicy',
        tags: ['spend-policies'],
        summary:
          "The spend policies that bind the calling key (the account's and its own), and what each daily cap has left.",
        response: { 200: EffectivePolicy },
      },
    },
    async (request) => {
      const { account, key } = callerOf(request);
      return policies.effective(account.id, key.id);
    },
  );

  r.get(
    '/spend-policies',
    {
      config: { feature: 'account', scope: 'admin' },
      schema: {
        operationId: 'listSpendPolicies',
        tags: ['spend-policies'],
        summary: `Every spend policy of the account: its own and its keys'. ${ADMIN_ONLY}`,
        response: { 200: Type.Object({ policies: Type.Array(SpendPolicySchema) }) },
      },
    },
    async (request) => ({ policies: await policies.list(callerOf(request).account.id) }),
  );

  for (const target of ['account', 'key'] as const) {
    const url = target === 'account' ? '/spend-policies/account' : '/spend-policies/keys/:keyId';
    const keyOf = (params: unknown): string | null =>
      target === 'account' ? null : (params as { keyId: string }).keyId;
    const whose = target === 'account' ? "the account's" : "one API key's";
    const id = target === 'account' ? 'Account' : 'Key';
    const params = target === 'account' ? {} : { params: KeyParams };

    r.get(
      url,
      {
        config: { feature: 'account', scope: 'admin' },
        schema: {
          operationId: `get${id}SpendPolicy`,
          tags: ['spend-policies'],
          summary: `Read ${whose} spend policy (404 when none is set). ${ADMIN_ONLY}`,
          ...params,
          response: { 200: SpendPolicySchema },
        },
      },
      async (request) => policies.get(callerOf(request).account.id, keyOf(request.params)),
    );

    r.put(
      url,
      {
        config: { feature: 'account', scope: 'admin' },
        schema: {
          operationId: `set${id}SpendPolicy`,
          tags: ['spend-policies'],
          summary: `Set (replace) ${whose} spend policy; custodial payments beyond it are refused with 403. ${ADMIN_ONLY}`,
          ...params,
          body: SpendPolicyBody,
          response: { 200: SpendPolicySchema },
        },
      },
      async (request) => policies.set(callerOf(request).account.id, keyOf(request.params), request.body),
    );

    r.delete(
      url,
      {
        config: { feature: 'account', scope: 'admin' },
        schema: {
          operationId: `delete${id}SpendPolicy`,
          tags: ['spend-policies'],
          summary: `Remove ${whose} spend policy (404 when none is set). ${ADMIN_ONLY}`,
          ...params,
          response: { 200: Deleted },
        },
      },
      async (request) => {
        await policies.remove(callerOf(request).account.id, keyOf(request.params));
        return { deleted: true as const };
      },
    );
  }
}
