import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import type { FaucetService } from '../../services/faucet-service.ts';
import type { WalletService } from '../../services/wallet-service.ts';
import { ADDRESS_OPTIONS } from '../plugins/address-keyword.ts';
import { dashboardUserOf } from './dashboard-session.ts';

/** What one "fund from faucet" press gives: enough for many test payments, in the native currency. */
export const DASHBOARD_FAUCET_AMOUNT = 1;

/** Custodial wallets with balances, and the faucet for the ones on local networks. */
export async function dashboardWalletRoutes(
  app: FastifyInstance,
  opts: { wallets: WalletService; faucet: FaucetService; networks: NetworkRegistry },
) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get('/wallets', { schema: { hide: true } }, async (request) => {
    const wallets = await opts.wallets.list(dashboardUserOf(request).accountId);
    return {
      wallets: wallets.map((wallet) => {
        const chain = opts.networks
          .all()
          .find((c) =>
            wallet.network === null
              ? c.info.family === wallet.chain && c.info.isDefault
              : c.info.id === wallet.network,
          );
        return {
          ...wallet,
          networkName: chain?.info.name ?? wallet.network,
          faucet: chain?.info.isLocal === true && chain.faucet !== undefined,
        };
      }),
    };
  });

  r.post(
    '/wallets',
    {
      schema: {
        hide: true,
        body: Type.Object(
          { chain: Type.Union([Type.Literal('solana'), Type.Literal('evm')]) },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => opts.wallets.create(dashboardUserOf(request).accountId, { chain: request.body.chain }),
  );

  r.post(
    '/wallets/:address/faucet',
    {
      schema: {
        hide: true,
        params: Type.Object({ address: Type.String({ minLength: 1, maxLength: 100, ...ADDRESS_OPTIONS }) }),
      },
    },
    async (request) => {
      // Only the account's own wallets: the dashboard is no open faucet for any address.
      const wallet = await opts.wallets.owned(
        dashboardUserOf(request).accountId,
        request.params.address,
        'address',
      );
      return opts.faucet.fund({
        address: wallet.address,
        amount: DASHBOARD_FAUCET_AMOUNT,
        network: wallet.network ?? undefined,
      });
    },
  );
}
