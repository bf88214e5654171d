import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { shareableUrl } from '../../domain/shareable-url.ts';
import { CHAIN_FAMILY_SCHEMA } from '../chain-family-schema.ts';

const TokenSchema = Type.Object({
  symbol: Type.String(),
  address: Type.String({ description: 'Mint (Solana) or contract (EVM) address.' }),
  decimals: Type.Integer(),
});

export const NetworkSchema = Type.Object(
  {
    id: Type.String({
      description: 'CAIP-2 id, e.g. solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp or eip155:8453.',
    }),
    family: CHAIN_FAMILY_SCHEMA,
    name: Type.String(),
    nativeCurrency: Type.Object({ symbol: Type.String(), decimals: Type.Integer() }),
    isDefault: Type.Boolean({
      description: "Used for this family's addresses when a request names no network.",
    }),
    isLocal: Type.Boolean({ description: 'A chain on the gateway machine; the faucet works only here.' }),
    rpcUrl: Type.Union([Type.String(), Type.Null()], {
      description:
        "Where local-mode callers may broadcast their signed transactions: the gateway's own endpoint, shown only when its URL cannot carry a secret (scheme, host and port alone). Null when it has a path, query or user part (where providers put API keys): broadcast through your own endpoint of this network.",
    }),
    wsUrl: Type.Union([Type.String(), Type.Null()], {
      description: 'The PubSub (WebSocket) endpoint, shown under the same rule as `rpcUrl`; null otherwise.',
    }),
    tokens: Type.Array(TokenSchema),
    x402V1Network: Type.Union([Type.String(), Type.Null()], {
      description:
        "The name x402 v1 gives this network (`solana-devnet`, `base-sepolia`; the embedded localnet is `solana-devnet` when it answers for devnet, X402_LOCALNET_AS_DEVNET), under which the facilitator settles v1 `exact` payments and a seller's paywall offers them to v1 clients (`x402-fetch`, `x402-axios`). Null when x402 v1 has no name for it (e.g. anvil's eip155:31337): v1 clients can pay there only with gate402's own scheme.",
    }),
    x402Aliases: Type.Array(Type.String(), {
      description:
        "Other CAIP-2 ids x402 payments may name this network by: the embedded Solana localnet answers for Solana devnet's (solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1) when X402_LOCALNET_AS_DEVNET is on, since stock @x402/svm clients know no other. Usually empty.",
    }),
  },
  { $id: 'Network', title: 'Network' },
);

/** The facilitator's v1 network names (FacilitatorService.v1NetworkName). */
export interface V1NetworkNames {
  v1NetworkName(network: string): string | undefined;
  aliasesOf(network: string): string[];
}

/** GET /networks: what the gateway is connected to. */
export async function networkRoutes(
  app: FastifyInstance,
  opts: { networks: NetworkRegistry; facilitator: V1NetworkNames },
) {
  app.get(
    '/networks',
    {
      config: { feature: 'networks' },
      schema: {
        operationId: 'listNetworks',
        summary: 'The configured networks, their native currency, RPC URLs and known tokens.',
        response: { 200: Type.Object({ networks: Type.Array(NetworkSchema) }) },
      },
    },
    async () => ({
      networks: opts.networks.list().map((n) => ({
        ...n,
        rpcUrl: shareableUrl(n.rpcUrl),
        wsUrl: n.wsUrl === undefined ? null : shareableUrl(n.wsUrl),
        x402V1Network: opts.facilitator.v1NetworkName(n.id) ?? null,
        x402Aliases: opts.facilitator.aliasesOf(n.id),
      })),
    }),
  );
}
