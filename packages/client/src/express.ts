import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Gate402Client } from './gate402-client.ts';
import { type Gate402Payment, Gate402Paywall, type ProtectOptions } from './paywall.ts';

/** `res.locals.payment` on a request the paywall let through. */
export interface PaidLocals {
  payment: Gate402Payment;
}

/**
 * x402 seller middleware for Express 4 and 5.
 *
 * @example
 * const { protect } = expressPaywall(new Gate402Client({ url, apiKey }));
 * app.get('/report', protect({ price: '0.01', payTo: wallet }), (req, res) => {
 *   res.json({ paidBy: res.locals.payment.payer });
 * });
 */
export function expressPaywall(gateway: Gate402Client): {
  protect(options: ProtectOptions): RequestHandler;
} {
  const paywall = new Gate402Paywall(gateway);
  return {
    protect(options) {
      const resource = paywall.protect(options);
      return async (req: Request, res: Response, next: NextFunction) => {
        try {
          const decision = await resource.handle({
            url: `${req.protocol}://${req.get('host')}${req.originalUrl}`,
            header: (name) => req.get(name),
          });
          res.set(decision.headers);
          if (!decision.paid) {
            // A string is the browser paywall page (its Content-Type is among the headers).
            if (typeof decision.body === 'string') res.status(decision.status).send(decision.body);
            else res.status(decision.status).json(decision.body);
            return;
          }
          res.locals.payment = decision.payment;
          next();
        } catch (error) {
          next(error);
        }
      };
    },
  };
}
