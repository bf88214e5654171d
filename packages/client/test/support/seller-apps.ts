import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { expressPaywall } from '../../src/express.ts';
import { fastifyPaywall, paymentOf } from '../../src/fastify.ts';
import type { Gate402Client } from '../../src/gate402-client.ts';
import { honoPaywall } from '../../src/hono.ts';
import type { ProtectOptions } from '../../src/paywall.ts';

export interface SellerApp {
  /** The protected resource's URL. */
  readonly url: string;
  close(): Promise<void>;
}

export type Framework = 'express' | 'fastify' | 'hono';

/**
 * A seller's app in one framework, on a free loopback port, with GET /weather behind the paywall.
 * The handler answers what the paywall attached, so a test sees the payment arrive in the handler.
 */
export async function startSellerApp(
  framework: Framework,
  gateway: Gate402Client,
  options: ProtectOptions,
): Promise<SellerApp> {
  if (framework === 'express') {
    const { protect } = expressPaywall(gateway);
    const app = express();
    app.get('/weather', protect(options), (_req, res) => {
      res.json({ forecast: 'sunny', payment: res.locals.payment });
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/weather`,
      close: () => new Promise((resolve) => server.close(() => resolve())),
    };
  }
  if (framework === 'fastify') {
    const { protect } = fastifyPaywall(gateway);
    const app = Fastify();
    app.get('/weather', { preHandler: protect(options) }, async (request) => ({
      forecast: 'sunny',
      payment: paymentOf(request),
    }));
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    return { url: `${address}/weather`, close: () => app.close() };
  }
  const { protect } = honoPaywall(gateway);
  const app = new Hono();
  app.get('/weather', protect(options), (c) => c.json({ forecast: 'sunny', payment: c.get('payment') }));
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/weather`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
