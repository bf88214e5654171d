import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { explorerTransactionUrl } from '../../chains/chain-families.ts';
import { PAYMENT_STATUSES } from '../../domain/payment-status.ts';
import type { PaymentQueryService } from '../../services/payments/payment-query.ts';
import type { RefundService } from '../../services/payments/refunds/refund-service.ts';
import type { Store } from '../../store/store.ts';
import { ADDRESS_OPTIONS } from '../plugins/address-keyword.ts';
import { MAX_REFUND_REASON_LENGTH } from '../routes/refunds.ts';
import { onceByDashboardKey } from './dashboard-idempotency.ts';
import { dashboardUserOf } from './dashboard-session.ts';

/** Payment history across the account's wallets, with filters and pages, and one payment in full. */
export async function dashboardPaymentRoutes(
  app: FastifyInstance,
  opts: { query: PaymentQueryService; refunds: RefundService; store: Store },
) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/payments',
    {
      schema: {
        hide: true,
        querystring: Type.Object(
          {
            wallet: Type.Optional(Type.String({ minLength: 1, maxLength: 100, ...ADDRESS_OPTIONS })),
            type: Type.Optional(Type.Union([Type.Literal('sent'), Type.Literal('received')])),
            status: Type.Optional(Type.Union(PAYMENT_STATUSES.map((s) => Type.Literal(s)))),
            limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
            offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 }),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => {
      const { wallet, type, status, limit, offset } = request.query;
      return opts.query.search(dashboardUserOf(request).accountId, {
        walletAddress: wallet,
        type,
        status,
        limit,
        offset,
      });
    },
  );

  r.get(
    '/payments/:paymentId',
    {
      schema: {
        hide: true,
        params: Type.Object({ paymentId: Type.String({ minLength: 1, maxLength: 100 }) }),
      },
    },
    async (request) => {
      const payment = await opts.query.status(dashboardUserOf(request).accountId, request.params.paymentId);
      const explorerUrl =
        payment.signature === null ? undefined : explorerTransactionUrl(payment.network, payment.signature);
      return { ...payment, explorerUrl: explorerUrl ?? null };
    },
  );

  // The Refund button's dialog (POST /payment/refund for the session's account). The dialog makes one
  // `idempotencyKey` when it opens, so a confirmation sent twice (a retry after a lost answer, or two at
  // once) is one refund: the second gets the first's answer, or 409 while the first still runs.
  // No API key: only the account's spend policy binds it.
  r.post(
    '/payments/:paymentId/refund',
    {
      schema: {
        hide: true,
        params: Type.Object({ paymentId: Type.String({ minLength: 1, maxLength: 100 }) }),
        body: Type.Object(
          {
            amount: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000_000_000 })),
            reason: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_REFUND_REASON_LENGTH })),
            idempotencyKey: Type.String({ minLength: 1, maxLength: 255 }),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      const { amount, reason, idempotencyKey } = request.body;
      const { accountId } = dashboardUserOf(request);
      const key = `dashboard-${idempotencyKey}`;
      const { paymentId } = request.params;
      return onceByDashboardKey(
        opts.store,
        reply,
        { accountId, key, request: { refund: paymentId, amount, reason } },
        () => opts.refunds.refund(accountId, paymentId, { amount, reason }, key, null),
      );
    },
  );
}
