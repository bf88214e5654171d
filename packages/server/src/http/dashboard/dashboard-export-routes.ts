import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { PaymentExportService } from '../../services/payments/export/payment-export-service.ts';
import { ExportQuery, sendExport } from '../routes/export.ts';
import { dashboardUserOf } from './dashboard-session.ts';

/**
 * GET /dashboard/api/payments/export: the same file as GET /payment/export, for the session's account.
 * A GET a link downloads (no CSRF token needed: it changes nothing, and the session cookie's SameSite
 * keeps another site's page from reading it).
 */
export async function dashboardExportRoutes(app: FastifyInstance, opts: { exports: PaymentExportService }) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get('/payments/export', { schema: { hide: true, querystring: ExportQuery } }, async (request, reply) => {
    const file = await opts.exports.open(dashboardUserOf(request).accountId, request.query);
    return sendExport(reply, file);
  });
}
