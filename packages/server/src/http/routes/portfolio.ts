import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { PortfolioService } from '../../services/wallets/portfolio.ts';
import { Address, Network } from './payments.ts';

const Portfolio = Type.Object(
  {
    publicKey: Type.String(),
    network: Type.String(),
    native: Type.Object({
      symbol: Type.String(),
      decimals: Type.Integer(),
      amount: Type.String({ description: 'Atomic units (lamports, wei), exact decimal text.' }),
      uiAmount: Type.Number(),
    }),
    tokens: Type.Array(
      Type.Object({
        account: Type.String({ description: 'Token account (Solana) or token contract (EVM).' }),
        mint: Type.String(),
        program: Type.String({ description: '`spl-token`, `spl-token-2022` or `erc20`.' }),
        decimals: Type.Integer(),
        amount: Type.String({ description: 'Atomic units, exact decimal text.' }),
        uiAmount: Type.Number(),
        symbol: Type.Union([Type.String(), Type.Null()], {
          description: 'When the network lists the token (GET /networks).',
        }),
      }),
      {
        description:
          'Every token account (Solana, both token programs, empty ones too, but not those of a closed mint) or held known ERC-20.',
      },
    ),
  },
  { $id: 'Portfolio', title: 'Portfolio' },
);

/** GET /portfolio/{public_key} (spec §4.8); also the cheap way to check an API key works. */
export async function portfolioRoutes(app: FastifyInstance, deps: { portfolio: PortfolioService }) {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/portfolio/:public_key',
    {
      config: { feature: 'portfolio' },
      schema: {
        operationId: 'getPortfolio',
        tags: ['portfolio'],
        summary: 'Native balance and token holdings of any wallet address.',
        description:
          'An empty or unknown wallet answers zero and no tokens. A malformed address: 400. A 200 also tells the API key is valid.',
        params: Type.Object({ public_key: Address('A Solana (base58) or EVM (0x…) address.') }),
        querystring: Type.Object({ network: Type.Optional(Network) }, { additionalProperties: false }),
        response: { 200: Portfolio },
      },
    },
    async (request) => deps.portfolio.portfolio(request.params.public_key, request.query.network),
  );
}
