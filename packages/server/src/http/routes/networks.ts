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
  },
  { $id: 'Network', title: 'Network' },
);

/** GET /networks: what the gateway is connected to. */
export async function networkRoutes(app: FastifyInstance, opts: { networks: NetworkRegistry }) {
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
      })),
    }),
  );
}
