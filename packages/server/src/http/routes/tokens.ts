import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TokenInfoService } from '../../services/wallets/token-info.ts';
import { Address, Network } from './payments.ts';

const Nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

const TokenInfo = Type.Object(
  {
    address: Type.String(),
    network: Type.String(),
    program: Type.String({ description: '`spl-token`, `spl-token-2022` or `erc20`.' }),
    decimals: Type.Integer(),
    supply: Type.String({ description: 'Atomic units, exact decimal text.' }),
    uiSupply: Type.Number({ description: 'Whole tokens.' }),
    mintAuthority: Nullable(
      'Who may mint (Solana mint authority; EVM: the contract owner, when its owner() answers one ABI-encoded address: a 32-byte word with 12 zero bytes in front; null for any other answer).',
    ),
    freezeAuthority: Nullable('Who may freeze token accounts.'),
    name: Nullable(
      'From Token-2022 metadata, Metaplex metadata, or the ERC-20 contract; null when absent or over 256 characters.',
    ),
    symbol: Nullable('As name; null when absent or over 64 characters.'),
    uri: Nullable('Off-chain metadata document, when the metadata names one of at most 2,048 characters.'),
  },
  { $id: 'TokenInfo', title: 'TokenInfo' },
);

/** GET /token/info/{mint_address} (spec §4.8). */
export async function tokenRoutes(app: FastifyInstance, deps: { tokens: TokenInfoService }) {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/token/info/:mint_address',
    {
      config: { feature: 'tokens' },
      schema: {
        operationId: 'getTokenInfo',
        tags: ['tokens'],
        summary: 'A token mint (SPL Token, Token-2022) or ERC-20 contract: supply, authorities, metadata.',
        description: 'Not a token: 404 `TOKEN_NOT_FOUND`. A malformed address: 400.',
        params: Type.Object({ mint_address: Address('Mint (Solana) or contract (EVM) address.') }),
        querystring: Type.Object({ network: Type.Optional(Network) }, { additionalProperties: false }),
        response: { 200: TokenInfo },
      },
    },
    async (request) => deps.tokens.info(request.params.mint_address, request.query.network),
  );
}
