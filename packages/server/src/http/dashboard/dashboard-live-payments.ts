import type { FastifyInstance } from 'fastify';
import type { EventHub } from '../../events/event-hub.ts';
import { paymentEventMessage } from '../../events/payment-event-message.ts';
import { dashboardUserOf } from './dashboard-session.ts';

/** A comment line now and then keeps proxies from closing an idle stream, and finds dead connections. */
const KEEPALIVE_MS = 15_000;

/**
 * GET /dashboard/api/payments/live: the account's payment events as Server-Sent Events, for the live
 * list. The messages are the payment stream's (`paymentEventMessage`), fed by the same EventHub; SSE
 * rather than the WebSocket because the browser sends the session cookie with it and reconnects by
 * itself. It carries no replay: on every (re)connection the page reloads the first page of history.
 */
export async function dashboardLivePayments(app: FastifyInstance, opts: { hub: EventHub }) {
  const open = new Set<() => void>();
  // preClose, not onClose: the HTTP server waits for open connections before onClose hooks run, and a
  // live stream never ends by itself.
  app.addHook('preClose', async () => {
    for (const end of [...open]) end();
  });

  app.get('/payments/live', { schema: { hide: true } }, async (request, reply) => {
    const { accountId } = dashboardUserOf(request);
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      'x-request-id': request.id,
    });
    res.write('retry: 2000\n\n');
    const unsubscribe = opts.hub.subscribe(accountId, (event) => {
      res.write(`id: ${event.id}\nevent: payment\ndata: ${JSON.stringify(paymentEventMessage(event))}\n\n`);
    });
    const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
    keepalive.unref();
    const end = () => {
      open.delete(end);
      clearInterval(keepalive);
      unsubscribe();
      res.end();
    };
    open.add(end);
    request.raw.once('close', end);
  });
}
