import type { AddressInfo } from 'node:net';
import { HTTPFacilitatorClient, type RouteConfig } from '@x402/core/server';
import type { Network, SchemeNetworkServer } from '@x402/core/types';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import express from 'express';

/** A stock x402 facilitator client for gate402's facilitator at `gatewayUrl`, with `key` as its Bearer. */
export function gatewayFacilitator(gatewayUrl: string, key: string): HTTPFacilitatorClient {
  const headers = { Authorization: `Bearer ${key}` };
  return new HTTPFacilitatorClient({
    url: `${gatewayUrl}/facilitator`,
    createAuthHeaders: async () => ({ verify: headers, settle: headers, supported: headers }),
  });
}

export interface TestShop {
  /** The shop's base URL, without a trailing slash. */
  readonly url: string;
  /** The express app, for routes a test adds itself. */
  readonly app: ReturnType<typeof express>;
  close(): Promise<void>;
}

/**
 * A stock `@x402/express` seller whose facilitator is gate402 (gatewayFacilitator), on a free port.
 * Every route is a GET of its path, paid as its config says, and answers its `body` once paid.
 */
export async function startShop(options: {
  gatewayUrl: string;
  key: string;
  schemes: readonly (readonly [Network, SchemeNetworkServer])[];
  routes: Record<string, RouteConfig & { body: unknown }>;
}): Promise<TestShop> {
  const server = new x402ResourceServer(gatewayFacilitator(options.gatewayUrl, options.key));
  for (const [network, scheme] of options.schemes) server.register(network, scheme);
  const paid = Object.entries(options.routes);
  const app = express();
  app.use(
    paymentMiddleware(
      Object.fromEntries(paid.map(([path, { body: _, ...route }]) => [`GET ${path}`, route])),
      server,
    ),
  );
  for (const [path, { body }] of paid) app.get(path, (_req, res) => void res.json(body));
  const listening = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => listening.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(listening.address() as AddressInfo).port}`,
    app,
    close: () => new Promise((resolve) => listening.close(() => resolve())),
  };
}
