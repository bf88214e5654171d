import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { NetworkRegistry } from '../../chains/network-registry.ts';

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
    family: Type.Union([Type.Literal('solana'), Type.Literal('evm')]),
    name: Type.String(),
    nativeCurrency: Type.Object({ symbol: Type.String(), decimals: Type.Integer() }),
    isDefault: Type.Boolean({
      description: "Used for this family's addresses when a request names no network.",
    }),
    isLocal: Type.Boolean({ description: 'A chain on the gateway machine; the faucet works only here.' }),
    rpcUrl: Type.String({ description: 'Where local-mode callers broadcast their signed transactions.' }),
    wsUrl: Type.Union([Type.String(), Type.Null()]),
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
        summary: 'The configured networks, their native currency, RPC URLs and known tokens.',
        response: { 200: Type.Object({ networks: Type.Array(NetworkSchema) }) },
      },
    },
    async () => ({ networks: opts.networks.list().map((n) => ({ ...n, wsUrl: n.wsUrl ?? null })) }),
  );
}
