import type { FastifyInstance } from 'fastify';
import { EVENT_TYPES } from '../../domain/payment-status.ts';
import { STREAM_PATH } from '../../events/stream/payment-stream.ts';
import { STREAM_CLOSE } from '../../events/stream/stream-close-codes.ts';

/**
 * GET /asyncapi.json: the payment stream described in AsyncAPI 3.0, beside /openapi.json (which cannot
 * describe a WebSocket). Written by hand from the same constants the stream uses (path, event types,
 * close codes); test/payment-stream.test.ts checks it against what the stream does.
 */
export async function asyncApiRoutes(
  app: FastifyInstance,
  opts: {
    version: string;
    /** The gateway serves TLS itself: the stream is wss. */
    secure?: boolean;
  },
) {
  const document = asyncApiDocument(opts.version, opts.secure === true);
  app.get('/asyncapi.json', { schema: { hide: true } }, async () => document);
}

export function asyncApiDocument(version: string, secure = false) {
  const payment = {
    type: 'object',
    description: 'The payment as GET /payment/status shows it (spec §2.1), when the event was written.',
    required: ['paymentId', 'type', 'network', 'status', 'amount', 'sender', 'recipient', 'timestamp'],
    properties: {
      paymentId: { type: 'string' },
      type: { type: 'string', enum: ['sent', 'received'] },
      network: { type: 'string', description: 'CAIP-2 id' },
      signature: { type: ['string', 'null'] },
      status: { type: 'string' },
      amount: { type: 'number' },
      sender: { type: 'string' },
      recipient: { type: 'string' },
      resource: { type: 'string' },
      blockHeight: { type: ['integer', 'null'] },
      confirmations: { type: 'integer' },
      timestamp: { type: 'integer' },
      metadata: { type: 'object' },
      asset: {
        type: 'object',
        description:
          'What `amount` is in: the native currency (`address` null) or a token (x402 `exact`). On every event written since assets were shown (events older than that have none).',
        required: ['symbol', 'address', 'decimals'],
        properties: {
          symbol: { type: ['string', 'null'], description: 'SOL, ETH, USDC, …; null for an unlisted token.' },
          address: {
            type: ['string', 'null'],
            description: 'Mint or contract; null for the native currency.',
          },
          decimals: { type: 'integer' },
        },
      },
    },
  };
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'gate402 payment stream',
      version,
      description: [
        'Real-time payment events of the authenticated account (spec §6).',
        'Authenticate with `Authorization: Bearer <key>` on the upgrade, or `Sec-WebSocket-Protocol: bearer, <key>`, or a first message `{"type":"auth","apiKey":"…"}` within 5 s. An account holds at most STREAM_MAX_CONNECTIONS_PER_ACCOUNT (100) open connections on one instance; another is refused with HTTP 429, or closed with 4029 after an `auth` message. A refused upgrade answers the usual error body: 401, 403, 429, or 400 for a bad `since` or a malformed handshake (details name the header). The key of an open connection is asked again at each heartbeat: revoked, the connection is closed with 4001; a plan without the stream, 4003.',
        'Resume with `?since=<event id>` or `{"type":"subscribe","since":"<event id>"}`: missed events are replayed from the outbox in order, at the pace the client reads them, then live ones follow, with no gap and no duplicate.',
        `Close codes: ${Object.entries(STREAM_CLOSE)
          .map(([name, code]) => `${code} ${name}`)
          .join(', ')}.`,
      ].join('\n\n'),
    },
    servers: {
      gateway: {
        host: '{host}',
        protocol: secure ? 'wss' : 'ws',
        variables: { host: { default: '127.0.0.1:8402' } },
      },
    },
    channels: {
      payments: {
        address: STREAM_PATH,
        bindings: {
          ws: {
            method: 'GET',
            query: {
              type: 'object',
              properties: { since: { type: 'string', description: 'Replay the events after this one.' } },
            },
          },
        },
        messages: {
          paymentEvent: {
            name: 'paymentEvent',
            summary: 'A payment changed state.',
            payload: {
              type: 'object',
              required: ['id', 'type', 'createdAt', 'amount', 'data'],
              properties: {
                id: { type: 'string', description: '`evt_…`, time-sortable; use it as `since` to resume.' },
                type: { type: 'string', enum: [...EVENT_TYPES] },
                createdAt: { type: 'integer', description: 'Unix ms' },
                amount: {
                  type: 'number',
                  description: 'The payment amount in its currency, as the REST API answers it.',
                },
                data: payment,
              },
            },
          },
          control: {
            name: 'control',
            summary: 'Answers of the server: authenticated, subscribed, pong, error.',
            payload: {
              type: 'object',
              required: ['type'],
              properties: {
                type: { type: 'string', enum: ['authenticated', 'subscribed', 'pong', 'error'] },
                accountId: { type: 'string' },
                wallets: { type: ['array', 'null'], items: { type: 'string' } },
                types: { type: ['array', 'null'], items: { type: 'string' } },
                since: { type: ['string', 'null'] },
                success: { const: false },
                error: {
                  type: 'object',
                  description: 'The error object of spec §7 (code, message, details).',
                },
              },
            },
          },
          auth: {
            name: 'auth',
            payload: {
              type: 'object',
              required: ['type', 'apiKey'],
              properties: { type: { const: 'auth' }, apiKey: { type: 'string' } },
            },
          },
          subscribe: {
            name: 'subscribe',
            summary:
              'Replace the filter (all fields optional); with `since`, replay from there first. A subscribe with `since` counts as one request against the rate limit (over it: an error message RATE_LIMIT_EXCEEDED, the filter unchanged).',
            payload: {
              type: 'object',
              required: ['type'],
              additionalProperties: false,
              properties: {
                type: { const: 'subscribe' },
                wallets: {
                  type: 'array',
                  minItems: 1,
                  maxItems: 100,
                  items: { type: 'string' },
                  description: 'Payments from or to one of these; leave it out for every wallet.',
                },
                types: {
                  type: 'array',
                  minItems: 1,
                  items: { type: 'string', enum: [...EVENT_TYPES] },
                  description: 'Leave it out for every type.',
                },
                since: { type: 'string' },
              },
            },
          },
          ping: {
            name: 'ping',
            payload: { type: 'object', required: ['type'], properties: { type: { const: 'ping' } } },
          },
        },
      },
    },
    operations: {
      receivePaymentEvents: {
        action: 'send',
        channel: { $ref: '#/channels/payments' },
        messages: [
          { $ref: '#/channels/payments/messages/paymentEvent' },
          { $ref: '#/channels/payments/messages/control' },
        ],
      },
      controlSubscription: {
        action: 'receive',
        channel: { $ref: '#/channels/payments' },
        messages: [
          { $ref: '#/channels/payments/messages/auth' },
          { $ref: '#/channels/payments/messages/subscribe' },
          { $ref: '#/channels/payments/messages/ping' },
        ],
      },
    },
  };
}
