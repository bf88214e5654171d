import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { DEFAULT_MAX_TIMEOUT_SECONDS, type X402PayService } from '../../services/payments/x402/x402-pay.ts';
import { MAX_X402_HEADER_LENGTH } from '../../x402/payment-header.ts';
import { callerOf } from '../plugins/authentication.ts';
import { Address, AssetSchema, checkMetadataSize, Metadata, Resource } from './payments.ts';

const X402PayBody = Type.Object(
  {
    walletAddress: Address('The custodial wallet that pays (Solana base58 or EVM 0x…).'),
    paymentRequired: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_X402_HEADER_LENGTH,
        description:
          "The seller's `PAYMENT-REQUIRED` header value, as received (x402 v2: base64 of the PaymentRequired JSON). Give this, `paymentRequiredBody`, or both.",
      }),
    ),
    paymentRequiredBody: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description:
            "The seller's 402 body, parsed: an x402 v1 challenge (`{x402Version: 1, accepts}`), or whatever a v2 seller sent beside its header. When both this and `paymentRequired` offer payments, they must offer the same ones (scheme, network, asset, payTo, amount), or the request is refused naming `paymentRequiredBody`.",
        },
      ),
    ),
    resource: Type.Intersect([Resource], {
      description:
        'The URL that was answered 402. The PaymentRequired must name a resource on the same host (v2 `resource.url`, v1 `accepts[].resource`), or the request is refused naming `resource`.',
    }),
    maxAmount: Type.Record(
      Type.String({ minLength: 1, maxLength: 100 }),
      Type.Number({ exclusiveMinimum: 0 }),
      {
        minProperties: 1,
        maxProperties: 20,
        description:
          'The most one payment may cost, per token, in whole units: `{"USDC": 0.05}`; a key is a symbol GET /networks lists or a token address. An option in a token named here for no limit is refused.',
      },
    ),
    networks: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: 20,
        description: 'CAIP-2 ids the wallet may pay on; default every configured network of its family.',
      }),
    ),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
);

const X402PayResult = Type.Object(
  {
    success: Type.Literal(true),
    paymentId: Type.String(),
    status: Type.String({
      description:
        '`pending` until the chain shows the seller settled it (then `confirmed`; upto: at the amount settled), or `expired` once it can no longer be settled and was not. EVM by EIP-3009: `expired` only once the finalized block of the chain is stamped at or after `validBefore`, with the authorization unused at that block (never on the clock of the gateway or the head of a lagging node). Through Permit2 (upto, or exact with assetTransferMethod permit2), a permit whose Permit2 nonce the chain shows spent is never `expired`: Permit2 spends it only in the call that moves the tokens; an unused one is `expired` only once the finalized block of the chain is stamped past the deadline of the permit, with its nonce unspent at that block (never on the clock of the gateway or the head of a lagging node: the chain may still take it until then). If no transfer of it is found, it ends `finalized` once that is final, at the amount recorded (exact: the price; upto: the signed maximum, an upper bound), with `signature` null.',
    }),
    x402Version: Type.Union([Type.Literal(1), Type.Literal(2)]),
    paymentHeaderName: Type.String({ description: '`PAYMENT-SIGNATURE` (v2) or `X-PAYMENT` (v1).' }),
    paymentHeader: Type.String({
      description: 'The header value to repeat the request with: base64 of the signed PaymentPayload.',
    }),
    network: Type.String({ description: 'The configured network (CAIP-2) that carries it.' }),
    asset: AssetSchema,
    amount: Type.Number({ description: 'Whole units of `asset`.' }),
    recipient: Type.String({ description: "The seller's payTo." }),
    sender: Type.String(),
    resource: Type.Union([Type.String(), Type.Null()]),
    expiresAt: Type.Union([Type.Integer(), Type.Null()], {
      description:
        'Unix ms after which the seller can no longer settle it (EVM: validBefore); null on Solana, where its blockhash ends it.',
    }),
    timestamp: Type.Integer({ description: 'Unix ms.' }),
  },
  { $id: 'X402PayResult', title: 'X402PayResult' },
);

export interface X402PayRouteDeps {
  readonly x402Pay: X402PayService;
}

/** POST /payment/x402: pay any x402 seller from a custodial wallet. */
export async function x402PayRoutes(app: FastifyInstance, deps: X402PayRouteDeps) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.post(
    '/payment/x402',
    {
      config: { feature: 'payments', idempotent: true },
      schema: {
        operationId: 'payX402',
        tags: ['payments'],
        summary:
          "Pay an x402 seller's 402 from a custodial wallet: returns the signed payment header to send.",
        description: `Give the seller's PaymentRequired (the v2 \`PAYMENT-REQUIRED\` header value, or the v1 402 body) and the buyer's limits. The first \`exact\` or \`upto\` option the wallet may pay is signed with the wallet's key (Solana: the SPL transferChecked transaction with the seller's fee payer; EVM: an EIP-3009 authorization, or a Permit2 permit for \`exact\` with \`assetTransferMethod: permit2\` and for \`upto\` (EVM only; its signed maximum), after the wallet's one \`approve(Permit2, max)\` of the token, which the gateway sends from the wallet, its ETH paying the gas: 422 INSUFFICIENT_BALANCE when it has too little) and recorded as a \`pending\` sent payment (\`upto\`: at the maximum, then at the amount the chain shows settled); repeat the request to the seller with \`paymentHeaderName: paymentHeader\`. The seller's facilitator settles it; the gateway confirms it when the chain shows it, whoever submitted it, and expires it once it can no longer land. Only tokens GET /networks lists are paid, within \`maxAmount\`, for at most ${DEFAULT_MAX_TIMEOUT_SECONDS} s of validity; an option refused for any reason is named in PAYMENT_OPTION_REFUSED's \`details\`, and then nothing is signed or recorded. Send an \`Idempotency-Key\` header: the same key answers the same payment, never a second signature.`,
        body: X402PayBody,
        response: { 200: X402PayResult },
      },
    },
    async (request) => {
      const { account, key } = callerOf(request);
      checkMetadataSize(request.body.metadata);
      return deps.x402Pay.pay(account.id, request.body, request.idempotencyKey, key?.id ?? null);
    },
  );

  r.post(
    '/payment/x402/:paymentId/check',
    {
      config: { feature: 'payments' },
      schema: {
        operationId: 'checkX402Payment',
        tags: ['payments'],
        summary: 'The seller answered a paid request: look at the chain for this x402 payment now.',
        description:
          "Call it when the seller's answer carries a PAYMENT-RESPONSE (payingFetch does): the payment is looked for on chain now instead of at the background worker's next pass, and moves to `confirmed` (or `failed`, `expired`) only as the chain shows it, never on the seller's word. 404 PAYMENT_NOT_FOUND for anything but an x402 payment of your account.",
        params: Type.Object({ paymentId: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: {
          200: Type.Object(
            {
              success: Type.Literal(true),
              paymentId: Type.String(),
              status: Type.String(),
              signature: Type.Union([Type.String(), Type.Null()], {
                description: 'The landed transaction, once the chain shows it.',
              }),
            },
            { $id: 'X402PaymentCheck', title: 'X402PaymentCheck' },
          ),
        },
      },
    },
    async (request) => deps.x402Pay.check(callerOf(request).account.id, request.params.paymentId),
  );
}
