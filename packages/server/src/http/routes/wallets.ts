import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { ChainFamily } from '../../domain/address.ts';
import { invalidParameters } from '../../domain/gateway-error.ts';
import { MAX_WALLET_LABEL_LENGTH } from '../../domain/wallet-label.ts';
import type { WalletService } from '../../services/wallets/wallet-service.ts';
import { CHAIN_FAMILY_SCHEMA } from '../chain-family-schema.ts';
import { ADDRESS_OPTIONS } from '../plugins/address-keyword.ts';
import { callerOf } from '../plugins/authentication.ts';

const WalletSchema = Type.Object(
  {
    address: Type.String(),
    chain: CHAIN_FAMILY_SCHEMA,
    network: Type.Union([Type.String(), Type.Null()], { description: 'The network it was created for.' }),
    watchOnly: Type.Boolean({ description: 'Receive only: the gateway holds no key.' }),
    createdAt: Type.Integer(),
    label: Type.Union([Type.String(), Type.Null()], {
      description: 'Your name for the wallet (PATCH /wallets/{address}); null: none.',
    }),
  },
  { $id: 'Wallet', title: 'Wallet' },
);

/**
 * A label as sent: the service trims it and holds it to MAX_WALLET_LABEL_LENGTH characters (code points)
 * with no control characters (domain/wallet-label.ts), naming `label` when it breaks the rule; the schema
 * only bounds what is read (room for the spaces the trim removes).
 */
export const WalletLabelInput = Type.Union(
  [
    Type.String({
      maxLength: 4 * MAX_WALLET_LABEL_LENGTH,
      description: `At most ${MAX_WALLET_LABEL_LENGTH} characters once trimmed of surrounding white space; no control characters (nor bidirectional overrides). Empty once trimmed, or null: no label.`,
    }),
    Type.Null(),
  ],
  { description: 'Your name for the wallet, shown beside its address.' },
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
        description:
          "An optional `label` names the wallet (see PATCH /wallets/{address}). Without `watchOnly`: a new custodial wallet; the gateway generates and keeps its key. With `watchOnly: true`: registers `address`, whose key you keep, as a receive-only wallet of your account, once you prove you control it: get a challenge from POST /wallets/challenge, sign it with the address's key and send both here within 10 minutes. A challenge answers once, for the account and address it was issued to. Refusals: `INVALID_CHALLENGE` (not a text this gateway issued, or edited), `CHALLENGE_ACCOUNT_MISMATCH` (403: issued to another account), `CHALLENGE_ADDRESS_MISMATCH` (issued for another address or chain), `CHALLENGE_ALREADY_USED`, `CHALLENGE_EXPIRED`, `INVALID_SIGNATURE`; an address already registered, by any account: 409 `WALLET_ALREADY_REGISTERED`, which never says by whom.",
        body: Type.Object(
          {
            chain: CHAIN_FAMILY_SCHEMA,
            network: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
            address: Type.Optional(
              Type.String({
                minLength: 1,
                maxLength: 100,
                description: 'With watchOnly only.',
                ...ADDRESS_OPTIONS,
              }),
            ),
            watchOnly: Type.Optional(Type.Boolean()),
            label: Type.Optional(WalletLabelInput),
            challenge: Type.Optional(
              Type.String({
                minLength: 1,
                maxLength: 2000,
                description:
                  'With watchOnly only: the text POST /wallets/challenge answered for this address, unchanged.',
              }),
            ),
            signature: Type.Optional(
              Type.String({
                minLength: 1,
                maxLength: 300,
                description:
                  "With watchOnly only: the address's signature of `challenge`. Solana: ed25519 over the text's UTF-8 bytes (wallet-standard signMessage), as base58, base64 or hex. EVM: EIP-191 personal_sign, 0x-prefixed hex (externally owned accounts; smart-contract wallets are not supported).",
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: WalletSchema },
      },
    },
    async (request) => createOrWatch(opts.wallets, callerOf(request).account.id, request.body),
  );

  r.post(
    '/wallets/challenge',
    {
      config: { feature: 'wallets' },
      schema: {
        operationId: 'createWalletChallenge',
        tags: ['wallets'],
        summary: 'A challenge to sign, proving you control an address you want to watch.',
        description:
          "The first step of registering a watch-only wallet. The answer's `challenge` is a text naming gate402, your account, the address, a random nonce and the expiry; sign it with the address's key (Solana: wallet-standard signMessage, ed25519 over its UTF-8 bytes; EVM: personal_sign) and send it with the signature to POST /wallets within 10 minutes. It answers once, for your account and this address only. An address already registered, by any account: 409 `WALLET_ALREADY_REGISTERED`.",
        body: Type.Object(
          {
            chain: CHAIN_FAMILY_SCHEMA,
            address: Type.String({
              minLength: 1,
              maxLength: 100,
              description: 'The address to prove control of (Solana base58, EVM 0x… in any case).',
              ...ADDRESS_OPTIONS,
            }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object(
            {
              challenge: Type.String({
                description: 'The exact text to sign (UTF-8, lines separated by \\n).',
              }),
              chain: CHAIN_FAMILY_SCHEMA,
              address: Type.String({ description: 'The address in its canonical spelling (EIP-55 on EVM).' }),
              expiresAt: Type.Integer({ description: 'Unix ms; answer before then.' }),
            },
            { $id: 'WalletChallenge', title: 'WalletChallenge' },
          ),
        },
      },
    },
    async (request) => opts.wallets.challenge(callerOf(request).account.id, request.body),
  );

  r.get(
    '/wallets',
    {
      config: { feature: 'wallets' },
      schema: {
        operationId: 'listWallets',
        tags: ['wallets'],
        summary: 'Your wallets with their native and token balances.',
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
                  tokens: Type.Union(
                    [
                      Type.Array(
                        Type.Object({
                          symbol: Type.Union([Type.String(), Type.Null()], {
                            description:
                              'As GET /networks lists the token (the network or X402_EXTRA_ASSETS); null for a token neither lists.',
                          }),
                          address: Type.String({ description: 'The mint (Solana) or contract (EVM).' }),
                          decimals: Type.Integer(),
                          balance: Type.Number({ description: 'Whole units of the token.' }),
                          amount: Type.String({ description: 'Atomic units, decimal text (exact).' }),
                        }),
                      ),
                      Type.Null(),
                    ],
                    {
                      description:
                        'Every token the wallet holds on its network (Solana: SPL Token and Token-2022 accounts, summed per mint; EVM: the listed ERC-20 tokens it holds), listed ones first; null when the chain is unreachable. Send them with POST /payment/send and `asset`.',
                    },
                  ),
                }),
              ]),
            ),
          }),
        },
      },
    },
    async (request) => ({ wallets: await opts.wallets.list(callerOf(request).account.id) }),
  );

  r.patch(
    '/wallets/:address',
    {
      config: { feature: 'wallets' },
      schema: {
        operationId: 'updateWallet',
        tags: ['wallets'],
        summary: "Sets or clears one of your wallets' label.",
        description: `The label is your name for the wallet (custodial or watch-only), listed with it by GET /wallets and shown beside its address in the dashboard. At most ${MAX_WALLET_LABEL_LENGTH} characters once trimmed, no control characters: else 400 naming \`label\`. \`null\` (or a text empty once trimmed) clears it. An address that is no wallet of your account, another account's included: 404 \`WALLET_NOT_FOUND\`.`,
        params: Type.Object({
          address: Type.String({
            minLength: 1,
            maxLength: 100,
            description: 'One of your wallets (Solana base58, EVM 0x… in any case).',
            ...ADDRESS_OPTIONS,
          }),
        }),
        body: Type.Object({ label: WalletLabelInput }, { additionalProperties: false }),
        response: { 200: WalletSchema },
      },
    },
    async (request) =>
      opts.wallets.setLabel(callerOf(request).account.id, request.params.address, request.body.label),
  );
}

/** What POST /wallets takes, on the API and in the dashboard. */
export interface WalletRequest {
  readonly chain: ChainFamily;
  readonly network?: string | undefined;
  readonly address?: string | undefined;
  readonly watchOnly?: boolean | undefined;
  readonly label?: string | null | undefined;
  readonly challenge?: string | undefined;
  readonly signature?: string | undefined;
}

/**
 * A custodial wallet, or with `watchOnly` an address registered on proof of control: the one decision
 * behind every door that creates wallets, so none registers an address without a signed challenge.
 */
export function createOrWatch(wallets: WalletService, accountId: string, body: WalletRequest) {
  const { chain, network, address, watchOnly, challenge, signature, label } = body;
  if (watchOnly === true) {
    if (address === undefined || challenge === undefined || signature === undefined) {
      throw invalidParameters({
        ...(address === undefined ? { address: 'is required for a watch-only wallet' } : {}),
        ...(challenge === undefined
          ? { challenge: 'is required for a watch-only wallet: ask POST /wallets/challenge for one' }
          : {}),
        ...(signature === undefined
          ? { signature: "is required for a watch-only wallet: the address's signature of the challenge" }
          : {}),
      });
    }
    return wallets.watch(accountId, { chain, address, network, challenge, signature, label });
  }
  const onlyWatched = {
    ...(address === undefined
      ? {}
      : { address: 'is only accepted with watchOnly: true (keys are never imported)' }),
    ...(challenge === undefined ? {} : { challenge: 'is only accepted with watchOnly: true' }),
    ...(signature === undefined ? {} : { signature: 'is only accepted with watchOnly: true' }),
  };
  if (Object.keys(onlyWatched).length > 0) throw invalidParameters(onlyWatched);
  return wallets.create(accountId, { chain, network, label });
}
