import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { RefundService } from '../../services/payments/refunds/refund-service.ts';
import { callerOf } from '../plugins/authentication.ts';
import { AssetSchema, checkMetadataSize, Metadata, SendFee } from './payments.ts';

export const MAX_REFUND_REASON_LENGTH = 500;

const RefundBody = Type.Object(
  {
    amount: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 1_000_000_000_000,
        description:
          "Whole units of the payment's asset (as its status shows it); default: all of it that is not refunded yet. More than is left (the payment less its refunds that are confirmed or under way), or more decimals than the asset has, is 400 naming `amount`. No per-asset send bounds apply: a refund is bounded by the payment it gives back.",
      }),
    ),
    reason: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_REFUND_REASON_LENGTH,
        description: 'Why, in your words; stored on the refund and shown as `refundReason` in its status.',
      }),
    ),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
);

const RefundResult = Type.Object(
  {
    success: Type.Literal(true),
    mode: Type.Union([Type.Literal('custodial'), Type.Literal('local')], {
      description:
        '`custodial`: the gateway signed and broadcast the refund from the custodial wallet that received the payment (as POST /payment/send). `local`: the payment went to a watch-only wallet (or an address that is no wallet of the account): the answer is the unsigned transaction its owner signs and broadcasts (as POST /transaction/send), recorded `pending` until it lands.',
    }),
    refundOf: Type.String({ description: 'The payment refunded.' }),
    reason: Type.Optional(Type.String()),
    paymentId: Type.String({
      description: 'The refund: a new payment, `type` `refund` in status and history.',
    }),
    signature: Type.Optional(Type.String({ description: '`custodial`: the transaction signature (hash).' })),
    transaction: Type.Optional(Type.String({ description: '`local`: base64 unsigned transaction.' })),
    lastValidBlockHeight: Type.Optional(Type.Integer()),
    expiresAt: Type.Optional(Type.Integer({ description: '`local`: Unix ms; do not send after this.' })),
    reference: Type.Optional(Type.String()),
    amount: Type.Number({ description: "Refunded by this refund, in whole units of the payment's asset." }),
    recipient: Type.String({ description: 'The payer of the refunded payment.' }),
    status: Type.String({
      description:
        '`confirmed`; `submitted` when confirmation took longer than the wait; `pending` (`local`, a broadcast that could not reach the chain and is resent, or a refund held until the refunded payment is final: see `heldUntil`).',
    }),
    heldUntil: Type.Optional(
      Type.Literal('refunded_payment_finalized', {
        description:
          '`custodial` refund of a payment that is only `confirmed`: accepted, counted against what is refundable and charged to spend policies now, but its transaction is held — not signed or broadcast, `signature` and `paymentProof` empty — until the refunded payment is `finalized`; then it is sent (payment.sent, payment.confirmed, …). If the refunded payment is reverted instead, the refund ends `failed` (payment.failed, `failureReason` in its status), nothing sent, its amount refundable again.',
      }),
    ),
    blockHeight: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    timestamp: Type.Optional(Type.Integer()),
    estimatedConfirmation: Type.String(),
    paymentProof: Type.String(),
    network: Type.String(),
    asset: AssetSchema,
    fee: SendFee,
  },
  { $id: 'RefundResult', title: 'RefundResult' },
);

export interface RefundRouteDeps {
  readonly refunds: RefundService;
}

/** Refunds (#30): POST /payment/refund/{paymentId}. */
export async function refundRoutes(app: FastifyInstance, deps: RefundRouteDeps) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/payment/refund/:paymentId',
    {
      config: { feature: 'payments', idempotent: true },
      schema: {
        operationId: 'refundPayment',
        tags: ['payments'],
        summary:
          'Give back all or part of a payment you received, to its payer, in the same asset and network.',
        description:
          "For a `confirmed` or `finalized` payment your account received (POST /payment/receive, /transaction/receive, or an x402 settlement recorded for it): the wallet that received it sends the amount (default: all not refunded yet) back to the payer (x402 `exact`: the buyer that signed; Solana tokens go to its associated token account) as a new payment whose `refundOf` names it; the payment shows `refunds` in its status, and `payment.refunded` is emitted on it when a refund confirms (`payment.refund_reverted` if a reorganisation takes a confirmed refund off the chain). Refunds of one payment never sum above it, however many arrive at once. A refund of a payment that is `confirmed` but not yet `finalized` is accepted and held (`heldUntil`): it is sent once the payment is finalized and cancelled if a reorganisation reverts the payment; a watch-only wallet's refund is refused until then (409 INVALID_PAYMENT_STATE), since its owner would sign a transaction gate402 cannot hold back. Refused: another account's payment (404 PAYMENT_NOT_FOUND), a payment not yet confirmed (409 INVALID_PAYMENT_STATE), a refund, a payment you sent, or an amount of 0, above what is left or with more decimals than the asset (400 naming the field). Spend policies apply as to any payment leaving a wallet. Send an `Idempotency-Key` header: the same key answers the same refund.",
        params: Type.Object({
          paymentId: Type.String({
            pattern: '^pay_[0-9A-HJKMNP-TV-Z]{26}$',
            'x-error': 'must be a payment id (pay_…)',
          }),
        }),
        body: RefundBody,
        response: { 200: RefundResult },
      },
    },
    async (request) => {
      const { account, key } = callerOf(request);
      checkMetadataSize(request.body.metadata);
      return deps.refunds.refund(
        account.id,
        request.params.paymentId,
        request.body,
        request.idempotencyKey,
        key.id,
      );
    },
  );
}
