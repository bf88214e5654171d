import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TokenAccountService } from '../../services/wallets/token-accounts.ts';
import { callerOf } from '../plugins/authentication.ts';
import { Address, Network } from './payments.ts';

const TokenAccount = Type.Object(
  {
    walletAddress: Type.String(),
    network: Type.String(),
    asset: Type.String({ description: 'The mint.' }),
    account: Type.String({
      description:
        "The wallet's associated token account for the mint: where x402 `exact` payments to it go.",
    }),
    exists: Type.Boolean({
      description:
        'Whether it exists now. False only for a watch-only wallet: the gateway holds no key to open it.',
    }),
    created: Type.Boolean({ description: 'Opened by this request.' }),
    signature: Type.Union([Type.String(), Type.Null()], {
      description: 'The transaction that opened it, when this request did.',
    }),
  },
  { $id: 'TokenAccount', title: 'TokenAccount' },
);

/** POST /wallets/{address}/token-accounts: a Solana wallet's token account for an asset, opened if need be. */
export async function tokenAccountRoutes(app: FastifyInstance, deps: { tokenAccounts: TokenAccountService }) {
  app.withTypeProvider<TypeBoxTypeProvider>().post(
    '/wallets/:address/token-accounts',
    {
      config: { feature: 'wallets' },
      schema: {
        operationId: 'openTokenAccount',
        tags: ['wallets'],
        summary: "Opens (if it does not exist) a Solana wallet's associated token account for an asset.",
        description:
          "An x402 `exact` payment on Solana pays the payee's associated token account for the asset, which the buyer's transaction does not open: without it every payment fails (`invalid_exact_svm_payload_transaction_receiver_ata_not_found`). For one of your custodial wallets the gateway opens it, the wallet paying the fee and the rent-exempt deposit (about 0.002 SOL, returned if the account is closed) from its own SOL (422 `INSUFFICIENT_BALANCE` without it); it is idempotent (an existing account is answered as it is, at no cost) and safe to call at once from several places (one transaction, CreateIdempotent). For a watch-only wallet it only answers whether the account exists. The seller paywall (`protect({exact})`) calls it when it first prices a Solana `exact` option. `asset`: a symbol GET /networks lists or a mint address; not a mint: 404 `TOKEN_NOT_FOUND`. An EVM address: 400. Not your wallet: 403.",
        params: Type.Object({ address: Address('One of your Solana wallets.') }),
        body: Type.Object(
          {
            asset: Type.String({
              minLength: 1,
              maxLength: 100,
              description: 'A listed symbol (`USDC`) or a mint.',
            }),
            network: Type.Optional(Network),
          },
          { additionalProperties: false },
        ),
        response: { 200: TokenAccount },
      },
    },
    async (request) =>
      deps.tokenAccounts.ensure(callerOf(request).account.id, request.params.address, request.body),
  );
}
