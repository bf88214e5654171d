import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { Gate402Client } from './gate402-client.ts';
import { type Gate402Payment, Gate402Paywall, type ProtectOptions } from './paywall.ts';

/** Payments by request; a WeakMap rather than a request decoration, so no type of Fastify is changed. */
const payments = new WeakMap<FastifyRequest, Gate402Payment>();

/** The payment the paywall accepted for this request (undefined on an unprotected route). */
export function paymentOf(request: FastifyRequest): Gate402Payment | undefined {
  return payments.get(request);
}

/**
 * x402 seller middleware for Fastify 5: `protect(...)` is a route's `preHandler`.
 *
 * @example
 * const { protect } = fastifyPaywall(new Gate402Client({ url, apiKey }));
 * app.get('/report', { preHandler: protect({ price: '0.01', payTo: wallet }) }, async (request) => ({
 *   paidBy: paymentOf(request)?.payer,
 * }));
 */
export function fastifyPaywall(gateway: Gate402Client): {
  protect(options: ProtectOptions): preHandlerAsyncHookHandler;
} {
  const paywall = new Gate402Paywall(gateway);
  return {
    protect(options) {
      const resource = paywall.protect(options);
      return async function gate402Paywall(request: FastifyRequest, reply: FastifyReply) {
        const decision = await resource.handle({
          url: `${request.protocol}://${request.host}${request.url}`,
          header: (name) => {
            const value = request.headers[name.toLowerCase()];
            return Array.isArray(value) ? value[0] : value;
          },
        });
        reply.headers(decision.headers);
        if (!decision.paid) return reply.code(decision.status).send(decision.body);
        payments.set(request, decision.payment);
        return undefined;
      };
    },
  };
}
