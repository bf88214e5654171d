import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { addressFamily } from '../../domain/address.ts';
import { invalidParameters } from '../../domain/gateway-error.ts';
import { MAX_PROOF_HEX_LENGTH } from '../../services/payments/proofs/payment-proof.ts';
import type { VerifyPaymentService } from '../../services/payments/proofs/verify-payment.ts';
import { MAX_X402_HEADER_LENGTH } from '../../x402/payment-header.ts';
import { Address, AssetField, AssetSchema, Network } from './payments.ts';

/** 10^30 atomic units: a trillion whole units of an 18-decimal currency, beyond any payment. */
const MAX_ATOMIC_AMOUNT = 1e30;

const VerifyBody = Type.Object(
  {
    payment_proof: Type.String({
      minLength: 4,
      maxLength: Math.max(Math.ceil(MAX_PROOF_HEX_LENGTH / 3) * 4 + 4, MAX_X402_HEADER_LENGTH),
      pattern: '^[A-Za-z0-9+/]+={0,2}$',
      'x-error': 'must be base64',
      description:
        "Base64 of the payment proof's text (a gate402 proof, `0x…`), or an x402 payment header value (`X-PAYMENT` v1, `PAYMENT-SIGNATURE` v2) as sent, checked by the built-in facilitator without settling it (`transaction_id` is then the payload's settlement identity until it settles).",
    }),
    // Not capped at 2^53: 0.01 ETH is already 10^16 wei. A number a double cannot hold exactly is
    // refused by the exact-JSON parser before this schema is checked, so BigInt(amount) is what was written.
    amount: Type.Integer({
      minimum: 1,
      maximum: MAX_ATOMIC_AMOUNT,
      description:
        'The least that must have been paid, in atomic units of `asset` (lamports, wei, USDC micro-units), as x402 does. Any integer a JSON number holds exactly (e.g. 100000000000000000 wei = 0.1 ETH); one with more than 15 significant digits that a double would round is refused with 400 — round it down to one that holds.',
    }),
    recipient: Address('The wallet that must have been paid.'),
    asset: Type.Optional(AssetField),
    network: Type.Optional(Network),
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
    Type.Object({
      verified: Type.Literal(true),
      transaction_id: Type.String(),
      network: Type.String({ description: 'The network the payment is on (CAIP-2).' }),
      asset: AssetSchema,
    }),
    Type.Object({
      verified: Type.Literal(false),
      reason: Type.String({
        description:
          "malformed, unknown_issuer, bad_signature, expired, recipient_mismatch, network_mismatch, asset_mismatch (paid in another asset than `asset`), not_found, failed_on_chain, amount_too_low, payment_id_mismatch or already_used; for x402 payloads the facilitator's reason.",
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
        operationId: 'verifyPayment',
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
        asset: request.body.asset,
        network: request.body.network,
      });
    },
  );
}
