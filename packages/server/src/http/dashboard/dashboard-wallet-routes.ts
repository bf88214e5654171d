import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { invalidParameters } from '../../domain/gateway-error.ts';
import type { FaucetService } from '../../services/wallets/faucet-service.ts';
import type { WalletService } from '../../services/wallets/wallet-service.ts';
import { CHAIN_FAMILY_SCHEMA } from '../chain-family-schema.ts';
import { ADDRESS_OPTIONS } from '../plugins/address-keyword.ts';
import { createOrWatch, WalletLabelInput } from '../routes/wallets.ts';
import { dashboardUserOf } from './dashboard-session.ts';

/** What one "fund from faucet" press gives: enough for many test payments, in the native currency. */
export const DASHBOARD_FAUCET_AMOUNT = 1;
/** What one "faucet tokens" press gives, in whole units of the token (USDC: a hundred dollars). */
export const DASHBOARD_FAUCET_TOKEN_AMOUNT = 100;

/** Wallets with balances (custodial, or watch-only after proof of control), and the faucet for local ones. */
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
        const faucet = chain?.info.isLocal === true && chain.faucet !== undefined;
        return {
          ...wallet,
          networkName: chain?.info.name ?? wallet.network,
          faucet,
          // The tokens the local chain's faucet mints (its own USDC): one button each.
          faucetTokens: faucet ? (chain?.info.tokens.map((t) => t.symbol) ?? []) : [],
        };
      }),
    };
  });

  // Watch-only addresses take the same proof of control as POST /wallets of the API: the page shows the
  // challenge, the person signs it in their wallet and pastes the signature.
  r.post(
    '/wallets/challenge',
    {
      schema: {
        hide: true,
        body: Type.Object(
          {
            chain: CHAIN_FAMILY_SCHEMA,
            address: Type.String({ minLength: 1, maxLength: 100, ...ADDRESS_OPTIONS }),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => opts.wallets.challenge(dashboardUserOf(request).accountId, request.body),
  );

  r.post(
    '/wallets',
    {
      schema: {
        hide: true,
        body: Type.Object(
          {
            chain: CHAIN_FAMILY_SCHEMA,
            watchOnly: Type.Optional(Type.Boolean()),
            address: Type.Optional(Type.String({ minLength: 1, maxLength: 100, ...ADDRESS_OPTIONS })),
            label: Type.Optional(WalletLabelInput),
            challenge: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
            signature: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => createOrWatch(opts.wallets, dashboardUserOf(request).accountId, request.body),
  );

  // The wallets page's label editor: PATCH /wallets/{address} of the API, for the session's account.
  r.patch(
    '/wallets/:address',
    {
      schema: {
        hide: true,
        params: Type.Object({ address: Type.String({ minLength: 1, maxLength: 100, ...ADDRESS_OPTIONS }) }),
        body: Type.Object({ label: WalletLabelInput }, { additionalProperties: false }),
      },
    },
    async (request) =>
      opts.wallets.setLabel(dashboardUserOf(request).accountId, request.params.address, request.body.label),
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
      const token = faucetToken(request.body);
      return opts.faucet.fund({
        address: wallet.address,
        amount: token === undefined ? DASHBOARD_FAUCET_AMOUNT : DASHBOARD_FAUCET_TOKEN_AMOUNT,
        network: wallet.network ?? undefined,
        token,
      });
    },
  );
}

/**
 * The token a faucet press asks for: none (the native currency) without a body, as the page's first
 * button sends it; else the body's `token`, a symbol. Checked here rather than by a body schema, which
 * Fastify applies to an absent body too.
 */
function faucetToken(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  const token = typeof body === 'object' ? (body as { token?: unknown }).token : undefined;
  const extra = typeof body !== 'object' || Object.keys(body).some((key) => key !== 'token');
  if (
    extra ||
    (token !== undefined && (typeof token !== 'string' || token.length < 1 || token.length > 20))
  ) {
    throw invalidParameters({ token: 'must be a token symbol, such as USDC' });
  }
  return token as string | undefined;
}
