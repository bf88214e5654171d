import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { FaucetService } from '../../services/wallets/faucet-service.ts';
import { FAUCET_MAX_NATIVE, FAUCET_MAX_TOKEN } from '../../services/wallets/faucet-service.ts';
import { ADDRESS_OPTIONS } from '../plugins/address-keyword.ts';

const FaucetBody = Type.Object(
  {
    address: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'Solana or EVM address to fund.',
      ...ADDRESS_OPTIONS,
    }),
    amount: Type.Number({
      exclusiveMinimum: 0,
      maximum: FAUCET_MAX_TOKEN,
      description: `Whole units: at most ${FAUCET_MAX_NATIVE} of the native currency, ${FAUCET_MAX_TOKEN} of a token.`,
    }),
    token: Type.Optional(
      Type.String({ minLength: 1, maxLength: 16, description: 'A known token symbol, e.g. USDC.' }),
    ),
    network: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'CAIP-2 id; default by address.' }),
    ),
  },
  { additionalProperties: false },
);

/** POST /faucet: free money on local networks, for trying gate402 out. 403 elsewhere. */
export async function faucetRoutes(app: FastifyInstance, opts: { faucet: FaucetService }) {
  app.withTypeProvider<TypeBoxTypeProvider>().post(
    '/faucet',
    {
      config: { feature: 'faucet' },
      schema: {
        operationId: 'fundFromFaucet',
        summary: 'Fund an address with native currency or a known token (local networks only).',
        body: FaucetBody,
        response: {
          200: Type.Object({
            success: Type.Literal(true),
            network: Type.String(),
            address: Type.String(),
            amount: Type.Number(),
            currency: Type.String(),
            signature: Type.String(),
          }),
        },
      },
    },
    async (request) => ({ success: true as const, ...(await opts.faucet.fund(request.body)) }),
  );
}
