import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { invalidParameters } from '../../domain/gateway-error.ts';
import type { WalletService } from '../../services/wallet-service.ts';
import { callerOf } from '../plugins/authentication.ts';

const WalletSchema = Type.Object(
  {
    address: Type.String(),
    chain: Type.Union([Type.Literal('solana'), Type.Literal('evm')]),
    network: Type.Union([Type.String(), Type.Null()], { description: 'The network it was created for.' }),
    watchOnly: Type.Boolean({ description: 'Receive only: the gateway holds no key.' }),
    createdAt: Type.Integer(),
  },
  { $id: 'Wallet', title: 'Wallet' },
);

/** Custodial wallets and watch-only addresses of the caller's account. Private keys never leave the gateway. */
export async function walletRoutes(app: FastifyInstance, opts: { wallets: WalletService }) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/wallets',
    {
      config: { feature: 'wallets' },
      schema: {
        operationId: 'createWallet',
        tags: ['wallets'],
        summary: 'Create a custodial wallet, or register a watch-only address you control elsewhere.',
        body: Type.Object(
          {
            chain: Type.Union([Type.Literal('solana'), Type.Literal('evm')]),
            network: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
            address: Type.Optional(
              Type.String({ minLength: 1, maxLength: 100, description: 'With watchOnly only.' }),
            ),
            watchOnly: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        response: { 200: WalletSchema },
      },
    },
    async (request) => {
      const { account } = callerOf(request);
      const { chain, network, address, watchOnly } = request.body;
      if (watchOnly === true) {
        if (address === undefined)
          throw invalidParameters({ address: 'is required for a watch-only wallet' });
        return opts.wallets.watch(account.id, { chain, address, network });
      }
      if (address !== undefined) {
        throw invalidParameters({
          address: 'is only accepted with watchOnly: true (keys are never imported)',
        });
      }
      return opts.wallets.create(account.id, { chain, network });
    },
  );

  r.get(
    '/wallets',
    {
      config: { feature: 'wallets' },
      schema: {
        operationId: 'listWallets',
        tags: ['wallets'],
        summary: 'Your wallets with their native balances.',
        response: {
          200: Type.Object({
            wallets: Type.Array(
              Type.Intersect([
                WalletSchema,
                Type.Object({
                  balance: Type.Union([Type.Number(), Type.Null()], {
                    description: 'null when the chain is unreachable.',
                  }),
                  currency: Type.Union([Type.String(), Type.Null()]),
                }),
              ]),
            ),
          }),
        },
      },
    },
    async (request) => ({ wallets: await opts.wallets.list(callerOf(request).account.id) }),
  );
}
