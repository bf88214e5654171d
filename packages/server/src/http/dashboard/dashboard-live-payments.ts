import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { invalidParameters } from '../../domain/gateway-error.ts';
import type { EventRecord } from '../../domain/records/event-records.ts';
import { AccountEventFeed } from '../../events/account-event-feed.ts';
import type { EventHub } from '../../events/event-hub.ts';
import { paymentEventMessage } from '../../events/payment-event-message.ts';
import { isEventId } from '../../events/stream/stream-subscription.ts';
import type { AccessPolicy } from '../../services/accounts/access-policy.ts';
import type { DashboardAuthService } from '../../services/dashboard-auth/dashboard-auth-service.ts';
import { dashboardSessionOf } from './dashboard-session.ts';
import type { LiveStreamEnd, LiveStreamRegistry } from './live-stream-registry.ts';
import { readSessionCookie } from './session-cookie.ts';

/**
 * A comment line now and then keeps proxies from closing an idle stream and finds dead connections;
 * each beat also checks that the session is still active (it may have ended on another instance) and
 * that the account's plan still includes the stream.
 */
const KEEPALIVE_MS = 15_000;
/** What the browser waits before reconnecting by itself (with Last-Event-ID) after the stream drops. */
const RECONNECT_MS = 2_000;
/** Unsent bytes past which a browser counts as not reading: the stream ends and it resumes from its last id. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
const NOT_AN_EVENT = 'must be the id of one of your events (evt_…)';

/**
 * GET /dashboard/api/payments/live: the account's payment events as Server-Sent Events, for the live
 * list. The messages are the payment stream's (`paymentEventMessage`), each with its event id, fed by the
 * same AccountEventFeed as the WebSocket stream. SSE rather than the WebSocket because the browser sends
 * the session cookie with it and reconnects by itself, sending `Last-Event-ID`: the stream then first
 * replays the events after that one, so a dropped connection loses nothing and repeats nothing.
 * A page that opens a new stream instead passes `?since=<event id>`; the header wins when both are there.
 *
 * The gateway ends a stream with an `event: closed` whose data says why (LiveStreamEnd) when a newer
 * stream of the session replaced it or the session ended; the page should then not reconnect by itself.
 */
export async function dashboardLivePayments(
  app: FastifyInstance,
  opts: { hub: EventHub; auth: DashboardAuthService; policy: AccessPolicy; streams: LiveStreamRegistry },
) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  // preClose, not onClose: the HTTP server waits for open connections before onClose hooks run, and a
  // live stream never ends by itself.
  app.addHook('preClose', async () => opts.streams.endAll());

  r.get(
    '/payments/live',
    {
      schema: {
        hide: true,
        querystring: Type.Object(
          { since: Type.Optional(Type.String({ maxLength: 100 })) },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      const session = dashboardSessionOf(request);
      const accountId = session.user.accountId;
      const header = request.headers['last-event-id'];
      const lastEventId = typeof header === 'string' && header !== '' ? header : undefined;
      // The header is the browser's own record of the last event it got, so it wins over the query.
      const [field, since] =
        lastEventId !== undefined ? ['Last-Event-ID', lastEventId] : ['since', request.query.since];
      const sinceSeq =
        since === undefined || !isEventId(since)
          ? undefined
          : await opts.hub.store.events.seqOf(accountId, since);
      if (since !== undefined && sinceSeq === undefined) throw invalidParameters({ [field]: NOT_AN_EVENT });
      const token = readSessionCookie(request) ?? '';

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
        // Nothing follows a stream on its connection; without this an ended stream's connection would
        // sit idle and hold up a closing server for the keep-alive timeout.
        connection: 'close',
      });
      res.write(`retry: ${RECONNECT_MS}\n\n`);

      let ended = false;
      const end = (why?: LiveStreamEnd) => {
        if (ended) return;
        ended = true;
        clearInterval(keepalive);
        feed.close();
        unregister();
        // After a shutdown or a drop the browser should reconnect and resume; after these it should not.
        if (why === 'replaced' || why === 'session-ended' || why === 'forbidden') {
          res.write(`event: closed\ndata: ${JSON.stringify({ reason: why })}\n\n`);
        }
        res.end();
      };
      const send = (event: EventRecord) => {
        if (ended) return;
        res.write(`id: ${event.id}\nevent: payment\ndata: ${JSON.stringify(paymentEventMessage(event))}\n\n`);
        // The browser resumes from the last id it got, so ending a stream it does not read loses nothing.
        if (res.writableLength > MAX_BUFFERED_BYTES) end();
      };
      const feed = new AccountEventFeed(opts.hub, accountId, {
        deliver: send,
        drained: async () => {
          if (res.writableLength > MAX_BUFFERED_BYTES / 2 && !ended) {
            // Whichever comes first; the other listener goes too, or a long replay would pile them up.
            await new Promise<void>((resolve) => {
              const done = () => {
                res.off('drain', done).off('close', done);
                resolve();
              };
              res.once('drain', done).once('close', done);
            });
          }
          return !ended;
        },
      });
      const unregister = opts.streams.add(session.id, session.user.id, end);
      const keepalive = setInterval(() => {
        res.write(': keepalive\n\n');
        // The session, then the plan (it may have changed): the same policy as when the stream opened.
        opts.auth
          .session(token)
          .then(async (active) => {
            if (active === undefined) return end('session-ended');
            const access = await opts.policy.decide(
              { kind: 'account', accountId: active.user.accountId },
              'stream',
              { count: false },
            );
            if (!access.ok && access.error.code === 'FORBIDDEN') end('forbidden');
          })
          // Storage unavailable: keep the stream; the next beat asks again.
          .catch(() => {});
      }, KEEPALIVE_MS);
      keepalive.unref();
      res.once('close', () => end());
      if (sinceSeq !== undefined) {
        feed.replayAfter(sinceSeq).catch((error: unknown) => {
          request.log.warn({ err: error }, 'dashboard live replay failed');
          end(); // the browser reconnects with Last-Event-ID and the replay starts again
        });
      }
    },
  );
}
