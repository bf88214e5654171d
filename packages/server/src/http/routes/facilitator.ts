import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { GatewayError, toErrorBody } from '../../domain/gateway-error.ts';
import type { FacilitatorService } from '../../services/facilitator/facilitator-service.ts';
import { callerOf } from '../plugins/authentication.ts';

/** x402's facilitator request; the payload and requirements are read by version (v1 or v2) in the service. */
const FacilitatorRequest = Type.Object(
  {
    x402Version: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 2,
        description:
          "1 or 2. The payload's own `x402Version` decides how it is read; faremeter's facilitator client sends none here.",
      }),
    ),
    paymentPayload: Type.Object(
      {},
      { additionalProperties: true, description: 'x402 PaymentPayload (v1 or v2).' },
    ),
    paymentRequirements: Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'x402 PaymentRequirements (v1 or v2) the payload must meet. An amount (v1: maxAmountRequired) of 0 is refused `invalid_payment_requirements`: the fee payer would pay the network fee for a transfer of nothing.',
      },
    ),
  },
  // x402 clients may add fields in later versions; they are ignored rather than refused.
  { additionalProperties: true },
);

const VerifyResponse = Type.Object(
  {
    isValid: Type.Boolean(),
    invalidReason: Type.Optional(
      Type.String({ description: 'x402 reason code, e.g. insufficient_funds, duplicate_settlement.' }),
    ),
    invalidMessage: Type.Optional(Type.String()),
    payer: Type.Optional(Type.String()),
  },
  { $id: 'X402VerifyResponse', title: 'X402VerifyResponse' },
);

const SettleResponse = Type.Object(
  {
    success: Type.Boolean(),
    errorReason: Type.Optional(
      Type.String({
        description:
          'x402 reason code; `duplicate_settlement` (already settled), `settlement_pending` (sent, not confirmed yet: settle again, it is never sent twice; or leave it to the background worker), `transaction_failed`, or a verification reason.',
      }),
    ),
    errorMessage: Type.Optional(Type.String()),
    payer: Type.Optional(Type.String()),
    transaction: Type.String({
      description: 'The settling transaction (Solana signature, EVM hash); empty when none.',
    }),
    network: Type.String({ description: 'As the request named it (v1 name or CAIP-2 id).' }),
    amount: Type.Optional(
      Type.String({
        description:
          '`upto` only: the amount actually settled, atomic units (at most the signed maximum; "0" for a settle that charged nothing, with an empty `transaction`). Absent for `exact`.',
      }),
    ),
    paymentId: Type.Optional(
      Type.String({
        description:
          "gate402's record of this payment in your account (GET /payment/status/{paymentId}), on a success or a `duplicate_settlement` of your own settlement; not in the x402 standard, which lets a client ignore it. Its events (payment.finalized, payment.reverted) name the same id: grant on the settle, revoke on payment.reverted.",
      }),
    ),
  },
  { $id: 'X402SettleResponse', title: 'X402SettleResponse' },
);

/**
 * Over the account's fee budget: the gateway's error body and, in the same object, an x402
 * SettleResponse (`success` is false in both), so a stock `HTTPFacilitatorClient` reads the refusal's
 * reason as it reads any settle failure it is answered with a non-200 status.
 */
const FeeBudgetExceededResponse = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Type.String({
        description: '`FEE_BUDGET_EXCEEDED` (or `RATE_LIMIT_EXCEEDED` for the request rate).',
      }),
      message: Type.String(),
      retryAfter: Type.Optional(
        Type.Integer({ description: 'Seconds until the budget renews (00:00 UTC).' }),
      ),
      requestId: Type.Optional(Type.String()),
    }),
    errorReason: Type.Optional(Type.String({ description: 'x402 reason: `fee_budget_exceeded`.' })),
    errorMessage: Type.Optional(Type.String()),
    transaction: Type.Optional(Type.String({ description: 'Empty: nothing was sent.' })),
    network: Type.Optional(Type.String({ description: 'As the request named it.' })),
  },
  {
    description:
      "FEE_BUDGET_EXCEEDED: your account's daily budget of network fees the facilitator pays on this network (X402_FEE_BUDGET) has no room for this settlement's worst-case fee; nothing was claimed or broadcast. Also a valid x402 SettleResponse. RATE_LIMIT_EXCEEDED: the request rate, as on every route.",
  },
);

const SupportedResponse = Type.Object(
  {
    kinds: Type.Array(
      Type.Object({
        x402Version: Type.Integer(),
        scheme: Type.String(),
        network: Type.String(),
        extra: Type.Optional(Type.Object({}, { additionalProperties: true })),
      }),
    ),
    extensions: Type.Array(Type.String()),
    signers: Type.Record(Type.String(), Type.Array(Type.String())),
  },
  { $id: 'X402SupportedResponse', title: 'X402SupportedResponse' },
);

/**
 * The built-in x402 facilitator (x402 "Facilitator HTTP interface"): point `@x402/core`'s
 * `HTTPFacilitatorClient({url: "<gateway>/facilitator", createAuthHeaders})` here. Refusals are
 * answers (200 with isValid/success false and an x402 reason), as x402 facilitators give them.
 */
export async function facilitatorRoutes(app: FastifyInstance, deps: { facilitator: FacilitatorService }) {
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  const config = { feature: 'facilitator' as const };

  routes.get(
    '/facilitator/supported',
    {
      config,
      schema: {
        operationId: 'getSupportedPaymentKinds',
        tags: ['facilitator'],
        summary: 'x402: the payment kinds this facilitator settles.',
        description:
          'Scheme `exact` on every configured network, in x402 v2 (CAIP-2 ids) and v1 (network names) form. On Solana `extra.feePayer` is the fee payer sellers copy into their requirements. On EVM, where the chain carries Permit2 and x402\'s exact Permit2 proxy, `extra.assetTransferMethods` is `["eip3009","permit2"]`: requirements with `extra.assetTransferMethod: "permit2"` are settled through Permit2.',
        response: { 200: SupportedResponse },
      },
    },
    async () => deps.facilitator.supported(),
  );

  routes.post(
    '/facilitator/accepts',
    {
      config,
      schema: {
        operationId: 'facilitatorAccepts',
        tags: ['facilitator'],
        summary:
          "faremeter: complete a seller's payment requirements with what buyers need from this facilitator.",
        description:
          "The `POST <facilitator>/accepts` of faremeter's facilitator interface (`@faremeter/middleware` calls it for the 402 it answers). Takes an x402 v2 PaymentRequired (`{x402Version: 2, resource, accepts}`) and answers it with `accepts` completed: on Solana `extra.feePayer` (this facilitator's fee payer), `extra.decimals` and `extra.tokenProgram` of the mint. Requirements it does not settle (another scheme or network, a token it does not take) are left out, as faremeter's own facilitators do. Nothing is signed or recorded.",
        body: Type.Object(
          {
            x402Version: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 })),
            resource: Type.Optional(Type.Object({}, { additionalProperties: true })),
            accepts: Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 64 }),
          },
          { additionalProperties: true },
        ),
        response: {
          200: Type.Object(
            {
              x402Version: Type.Literal(2),
              resource: Type.Object({}, { additionalProperties: true }),
              accepts: Type.Array(Type.Object({}, { additionalProperties: true })),
            },
            { $id: 'X402AcceptsResponse', title: 'X402AcceptsResponse' },
          ),
        },
      },
    },
    async (request) => ({
      x402Version: 2 as const,
      resource: request.body.resource ?? { url: '' },
      accepts: await deps.facilitator.accepts(request.body.accepts),
    }),
  );

  routes.post(
    '/facilitator/verify',
    {
      config,
      schema: {
        operationId: 'verifyX402Payment',
        tags: ['facilitator'],
        summary: 'x402: verify a payment payload against requirements, without settling it.',
        description:
          'What the payload pays (token, recipient, amount) is checked against the requirements first: a payload that does not pay them is refused for that (`…_recipient_mismatch`, `…_amount_mismatch`, …) whether or not it was settled. One settled for them is `duplicate_settlement` (`settlement_pending` while its settlement is under way); a payment below X402_MIN_SETTLE_AMOUNT for its asset is `amount_below_minimum`; the rest of the checks follow. The fee budget is not looked at here: a settle over it answers 429 FEE_BUDGET_EXCEEDED.',
        body: FacilitatorRequest,
        response: { 200: VerifyResponse },
      },
    },
    async (request) => deps.facilitator.verify(request.body.paymentPayload, request.body.paymentRequirements),
  );

  routes.post(
    '/facilitator/settle',
    {
      config,
      schema: {
        operationId: 'settleX402Payment',
        tags: ['facilitator'],
        summary: 'x402: settle a payment payload on chain, exactly once.',
        description:
          "Verifies, signs (Solana: as fee payer; EVM: transferWithAuthorization) and stores the transaction before broadcasting it, then waits for `confirmed`. What the payload pays (token, recipient, amount) is checked first: a payload that does not pay the requirements is refused for that (`…_recipient_mismatch`, …) whether or not it was settled, never answered with a settlement. The same payload again, for the same payTo, asset and amount: `duplicate_settlement` (also to another account: a settlement is its first asker's). The payment is recorded for your account — the one whose key calls settle — and for no other account, whoever holds payTo. A payment below X402_MIN_SETTLE_AMOUNT for its asset: `amount_below_minimum`, before anything is signed. The network fee the facilitator pays is charged to your account's daily budget for the network (X402_FEE_BUDGET), worst case first, corrected to the fee paid once the transaction lands: over it, 429 FEE_BUDGET_EXCEEDED and nothing is sent. Not confirmed within PAYMENT_CONFIRM_TIMEOUT_MS: `settlement_pending` with the transaction; settling again looks at that transaction and never sends another. Nobody has to: a background worker finishes every settlement left pending the same way, recording the seller's payment (status, history, stream, webhooks) once it confirms. On EVM, if another transaction used the authorization or permit first, the payment happened: the settlement is settled on that transaction (its hash is the answer's `transaction`); once a block at the authorization's validBefore (past the permit's deadline) exists with it unused, the settlement fails.",
        body: FacilitatorRequest,
        response: { 200: SettleResponse, 429: FeeBudgetExceededResponse },
      },
    },
    async (request, reply) => {
      const { paymentPayload, paymentRequirements } = request.body;
      try {
        // Settled for the caller's account: its payment, its fee budget (see FacilitatorService).
        return await deps.facilitator.settle(
          paymentPayload,
          paymentRequirements,
          callerOf(request).account.id,
        );
      } catch (error) {
        if (!(error instanceof GatewayError) || error.code !== 'FEE_BUDGET_EXCEEDED') throw error;
        if (error.retryAfter !== undefined) reply.header('retry-after', String(error.retryAfter));
        const { network } = paymentRequirements as { network?: unknown };
        return reply.code(429).send({
          ...toErrorBody(error, request.id),
          errorReason: 'fee_budget_exceeded',
          errorMessage: error.message,
          transaction: '',
          network: typeof network === 'string' ? network : '',
        });
      }
    },
  );
}
