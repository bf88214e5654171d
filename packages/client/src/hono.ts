import type { MiddlewareHandler } from 'hono';
import type { Gate402Client } from './gate402-client.ts';
import { type Gate402Payment, Gate402Paywall, type ProtectOptions } from './paywall.ts';

/** The context variables the paywall sets: `c.get('payment')`. */
export interface PaywallVariables {
  payment: Gate402Payment;
}

/**
 * x402 seller middleware for Hono 4.
 *
 * @example
 * const { protect } = honoPaywall(new Gate402Client({ url, apiKey }));
 * app.get('/report', protect({ price: '0.01', payTo: wallet }), (c) => c.json({ paidBy: c.get('payment').payer }));
 */
export function honoPaywall(gateway: Gate402Client): {
  protect(options: ProtectOptions): MiddlewareHandler<{ Variables: PaywallVariables }>;
} {
  const paywall = new Gate402Paywall(gateway);
  return {
    protect(options) {
      const resource = paywall.protect(options);
      return async (c, next) => {
        const decision = await resource.handle({ url: c.req.url, header: (name) => c.req.header(name) });
        if (!decision.paid) {
          // A string is the browser paywall page (its Content-Type is among the headers).
          if (typeof decision.body === 'string') {
            return c.body(decision.body, decision.status as 402, decision.headers);
          }
          return c.json(decision.body as object, decision.status as 402, decision.headers);
        }
        c.set('payment', decision.payment);
        await next();
        // Set on the handler's answer, whichever way it was made (c.json or a Response of its own). A
        // Response whose headers are immutable (fetch's, Response.redirect's) is copied first: the payment
        // is already taken, so throwing here would answer the buyer who paid with a 500.
        const set = () => {
          for (const [name, value] of Object.entries(decision.headers)) c.res.headers.set(name, value);
        };
        try {
          set();
        } catch {
          c.res = new Response(c.res.body, c.res);
          set();
        }
        return undefined;
      };
    },
  };
}
