import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { addressFamily } from '../../domain/address.ts';
import { invalidParameters } from '../../domain/gateway-error.ts';
import { MAX_PROOF_HEX_LENGTH } from '../../services/payment-proof.ts';
import type { VerifyPaymentService } from '../../services/verify-payment.ts';
import { Address } from './payments.ts';

const VerifyBody = Type.Object(
  {
    payment_proof: Type.String({
      minLength: 4,
      maxLength: Math.ceil(MAX_PROOF_HEX_LENGTH / 3) * 4 + 4,
      pattern: '^[A-Za-z0-9+/]+={0,2}$',
      'x-error': 'must be base64',
      description: "Base64 of the payment proof's text (a gate402 proof, `0x…`).",
    }),
    amount: Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'The least that must have been paid, in atomic units (lamports, wei), as x402 does.',
    }),
    recipient: Address('The wallet that must have been paid.'),
    metadata: Type.Optional(
      Type.Object(
        {},
        { additionalProperties: true, maxProperties: 50, description: 'Free-form; not checked.' },
      ),
    ),
  },
  { additionalProperties: false },
);

const VerifyResult = Type.Union(
  [
    Type.Object({ verified: Type.Literal(true), transaction_id: Type.String() }),
    Type.Object({
      verified: Type.Literal(false),
      reason: Type.String({
        description:
          'malformed, unknown_issuer, bad_signature, expired, recipient_mismatch, not_found, failed_on_chain, amount_too_low, payment_id_mismatch or already_used.',
      }),
      message: Type.String(),
    }),
  ],
  { $id: 'VerifyResult', title: 'VerifyResult' },
);

/** POST /v1/payments/verify (spec §4.5). */
export async function verifyRoutes(app: FastifyInstance, deps: { verify: VerifyPaymentService }) {
  app.withTypeProvider<TypeBoxTypeProvider>().post(
    '/v1/payments/verify',
    {
      config: { feature: 'verification' },
      schema: {
        tags: ['verification'],
        summary: 'Check a payment proof against the chain without redeeming it.',
        description:
          'Answers `verified: true` with the transaction id when the chain shows a payment of at least `amount` atomic units to `recipient`, as the proof claims and not yet redeemed; otherwise `verified: false` with a reason. Looks once, without waiting. Never consumes the proof: redeem it with /payment/receive.',
        body: VerifyBody,
        response: { 200: VerifyResult },
      },
    },
    async (request) => {
      if (addressFamily(request.body.recipient) === undefined)
        throw invalidParameters({ recipient: 'must be a Solana (base58) or EVM (0x…) address' });
      return deps.verify.verify({
        paymentProof: request.body.payment_proof,
        amount: BigInt(request.body.amount),
        recipient: request.body.recipient,
      });
    },
  );
}
