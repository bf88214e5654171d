import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type {
  PaymentExport,
  PaymentExportService,
} from '../../services/payments/export/payment-export-service.ts';
import { ADDRESS_OPTIONS } from '../plugins/address-keyword.ts';
import { callerOf } from '../plugins/authentication.ts';

const TIME_RULE =
  'Unix milliseconds, an RFC 3339 date-time with its zone (`2026-01-31T12:00:00Z`), or a date (`2026-01-31`, UTC).';

/** The query of an export, for the API and the dashboard alike. */
export const ExportQuery = Type.Object(
  {
    format: Type.Union([Type.Literal('csv'), Type.Literal('jsonl')], {
      default: 'csv',
      description:
        '`csv` (RFC 4180, a header row, CRLF line ends) or `jsonl` (JSON Lines: one object a line).',
    }),
    from: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 40,
        description: `Payments created at or after this time. ${TIME_RULE} Default: the first payment.`,
      }),
    ),
    to: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 40,
        description: `Payments created before this time; a date includes that whole day. ${TIME_RULE} Default: now.`,
      }),
    ),
    wallet: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'Only the payments of this wallet of yours; default: every wallet of the account.',
        ...ADDRESS_OPTIONS,
      }),
    ),
  },
  { additionalProperties: false },
);

/** Sends an export as a download: streamed, with its file name. */
export function sendExport(reply: FastifyReply, file: PaymentExport): FastifyReply {
  reply
    .type(file.contentType)
    .header('content-disposition', `attachment; filename="${file.filename}"`)
    .header('x-content-type-options', 'nosniff');
  // HEAD (the dashboard checks a request with it before downloading): the answer without the file.
  // Not Fastify's own HEAD handling, which would read the whole stream to throw it away.
  if (reply.request.method === 'HEAD') {
    file.body.destroy();
    return reply.send();
  }
  return reply.send(file.body);
}

/** GET /payment/export: the account's payments as a CSV or JSON Lines file. */
export async function exportRoutes(app: FastifyInstance, deps: { exports: PaymentExportService }) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get(
    '/payment/export',
    {
      config: { feature: 'history' },
      schema: {
        operationId: 'exportPayments',
        tags: ['payments'],
        summary: "Your account's payments in a date range as a CSV or JSON Lines file, oldest first.",
        description:
          "Streamed as it is read, so a million rows download in bounded memory. One row per payment: `paymentId`, `type` (sent, received, refund), `status`, `mode`, `network`, `wallet`, `sender`, `recipient`, `amount` (exact decimal text in the asset's whole units), `asset` (symbol), `assetAddress` (null for the native currency), `decimals`, `amountAtomic` (integer atomic units), `fee` and `feeAsset` (the network fee, native currency), `resource`, `signature`, `blockHeight`, `createdAt` (ISO 8601 UTC), `timestamp` (Unix ms), `confirmedAt`, `refundOf`, `refundReason`, `metadata` (JSON). CSV cells that a spreadsheet would run as a formula (starting with = + - @, tab or CR) are prefixed with `'`. A failure after the first bytes cuts the response off (no final chunk), so a partial file is never taken for a whole one.",
        querystring: ExportQuery,
        response: {
          200: {
            description: 'The file, as an attachment (Content-Disposition names it).',
            content: {
              'text/csv': { schema: { type: 'string' } },
              'application/jsonl': { schema: { type: 'string' } },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const file = await deps.exports.open(callerOf(request).account.id, request.query);
      return sendExport(reply, file);
    },
  );
}
