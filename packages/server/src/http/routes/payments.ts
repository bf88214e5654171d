import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { GatewayError, invalidParameters } from '../../domain/gateway-error.ts';
import { PAYMENT_STATUSES } from '../../domain/payment-status.ts';
import type { SendPaymentService } from '../../services/payments/custodial/send-payment.ts';
import { noneMatch } from '../../services/payments/history-page-cache.ts';
import type { HistoryPage, PaymentQueryService } from '../../services/payments/payment-query.ts';
import { MAX_PROOF_HEX_LENGTH } from '../../services/payments/proofs/payment-proof.ts';
import {
  MAX_RECEIVE_TIMEOUT_SECONDS,
  type ReceivePaymentService,
} from '../../services/payments/receive-payment.ts';
import { MAX_SEND_AMOUNT } from '../../services/payments/send-amount-bounds.ts';
import { MAX_X402_HEADER_LENGTH } from '../../x402/payment-header.ts';
import { ADDRESS_OPTIONS } from '../plugins/address-keyword.ts';
import { callerOf } from '../plugins/authentication.ts';

export const MAX_METADATA_BYTES = 4096;

/**
 * Refuses metadata over MAX_METADATA_BYTES as JSON. Nesting too deep for JSON.stringify (thousands of
 * levels, already more bytes than allowed) is refused the same way, not failed with 500.
 */
export function checkMetadataSize(metadata: object | undefined): void {
  if (metadata === undefined) return;
  let bytes: number;
  try {
    bytes = Buffer.byteLength(JSON.stringify(metadata));
  } catch {
    bytes = Number.POSITIVE_INFINITY;
  }
  if (bytes > MAX_METADATA_BYTES)
    throw invalidParameters({ metadata: `must be at most ${MAX_METADATA_BYTES} bytes as JSON` });
}

/** An address field: EVM addresses reach the handler EIP-55 checksummed, whatever case was sent. */
export const Address = (description: string) =>
  Type.String({ minLength: 1, maxLength: 100, description, ...ADDRESS_OPTIONS });
export const Resource = Type.String({
  format: 'uri',
  maxLength: 2048,
  description: 'The protected resource URL.',
});
/** On the receive routes the resource is also a check of the proof (ProofVerifier). */
export const ReceiveResource = Type.String({
  format: 'uri',
  maxLength: 2048,
  description:
    'The protected resource this payment must be for. A gateway proof made for another resource (`resource_mismatch`), or naming none (`resource_missing`), is refused with INVALID_PAYMENT_PROOF; so is an x402 v2 payload whose `resource.url` names another (`resource_mismatch`; a payload naming none is accepted: x402 does not require it). Omit it to accept a proof whatever it was made for.',
});
export const Network = Type.String({
  minLength: 1,
  maxLength: 100,
  description: 'CAIP-2 network id; default: the default network of the address family (GET /networks).',
});
export const Metadata = Type.Object(
  {},
  {
    additionalProperties: true,
    maxProperties: 50,
    description: `Free-form object (description, referenceId, …), at most ${MAX_METADATA_BYTES} bytes as JSON.`,
  },
);

/** What a payment is paid in, in every answer that reports one. */
export const AssetSchema = Type.Object(
  {
    symbol: Type.Union([Type.String(), Type.Null()], {
      description: 'SOL, ETH, USDC, …; null for a token neither the network nor the operator lists.',
    }),
    address: Type.Union([Type.String(), Type.Null()], {
      description: "The token's mint (Solana) or contract (EVM); null for the network's native currency.",
    }),
    decimals: Type.Integer({ description: 'Of the amount: 9 for SOL, 18 for ETH, 6 for USDC.' }),
  },
  { $id: 'Asset', title: 'Asset' },
);

/**
 * The most the sender pays besides the amount, in the network's native currency: the network fee, and
 * for a token the opening of the recipient's token account when the transfer opens it.
 */
export const SendFee = Type.Number({
  description:
    "The most the sender pays besides the amount, in the network's native currency: the network fee, and for a token the opening of the recipient's token account when the transfer opens it.",
});

export const SendBody = Type.Object(
  {
    walletAddress: Address('Sender: one of your custodial wallets (Solana base58 or EVM 0x…).'),
    recipientAddress: Address(
      'Recipient wallet address. A Solana sysvar or program (System, Vote, Stake, the loaders, Token, …) is no wallet and is refused with INVALID_RECIPIENT.',
    ),
    amount: Type.Number({
      exclusiveMinimum: 0,
      maximum: MAX_SEND_AMOUNT,
      description:
        'Whole units of `asset` (default the native currency, SOL or ETH); bounds per asset are configuration (native: 0.001 to 100).',
    }),
    asset: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description:
          "What to send: a symbol GET /networks lists for the network (`USDC`; any case) or a token's mint (Solana: SPL Token or Token-2022) / contract (EVM: ERC-20) address; default the network's native currency. Refused with 400 naming `asset`, before anything is signed or recorded: a symbol or address the network does not have, an address that is no token, and a Token-2022 mint with a transfer fee, transfer hook, permanent delegate or non-transferable tokens (the recipient would be paid less, or not for good). On Solana the transfer opens the recipient's associated token account when it has none, the sender paying its rent (in `fee`). The token balance and the native balance for the fees are checked apart; 422 INSUFFICIENT_BALANCE names the one that falls short.",
      }),
    ),
    resource: Type.Optional(Resource),
    metadata: Type.Optional(Metadata),
    priorityFee: Type.Optional(
      Type.Number({
        minimum: 0.00001,
        maximum: 0.01,
        description: 'Total priority fee in native currency; default: from recent fees on the network.',
      }),
    ),
    network: Type.Optional(Network),
  },
  { additionalProperties: false },
);

const SendResult = Type.Object(
  {
    success: Type.Literal(true),
    paymentId: Type.String(),
    signature: Type.String(),
    amount: Type.Number(),
    recipient: Type.String(),
    status: Type.String({
      description: '`confirmed`, or `submitted` when confirmation took longer than the wait.',
    }),
    blockHeight: Type.Union([Type.Integer(), Type.Null()]),
    timestamp: Type.Integer({ description: 'Unix ms.' }),
    estimatedConfirmation: Type.String(),
    paymentProof: Type.String({ description: 'gate402 proof, `0x` hex; give it to the seller (X-PAYMENT).' }),
    network: Type.String(),
    asset: AssetSchema,
    fee: SendFee,
  },
  { $id: 'SendResult', title: 'SendResult' },
);

/** Fields the receive endpoints (/payment/receive, /transaction/receive) share. */
export const PaymentProofField = Type.String({
  minLength: 1,
  maxLength: Math.max(MAX_PROOF_HEX_LENGTH, MAX_X402_HEADER_LENGTH),
  description:
    'From the payment header: a gate402 proof (`0x…`, a native-currency payment), or a standard x402 payload as sent in `X-PAYMENT` (v1) or `PAYMENT-SIGNATURE` (v2), verified and settled through the built-in facilitator or `facilitatorUrl`. x402 `exact` pays in tokens only: state the token in `asset` (e.g. `USDC`), or the payload is refused `asset_mismatch`.',
});
export const ExpectedAmountField = Type.Number({
  exclusiveMinimum: 0,
  maximum: 1_000_000_000,
  description: 'In whole units of `asset` (default: the native currency, SOL or ETH).',
});
/** What a seller asks to be paid in, on the routes that check a payment (receive, verify). */
export const AssetField = Type.String({
  minLength: 1,
  maxLength: 100,
  description:
    "What the payment must be paid in: a symbol GET /networks lists for the network (`SOL`, `ETH`, `USDC`; any case) or a token's mint (Solana) / contract (EVM) address. Default: the network's native currency. Naming an asset pins the network (`network`, else the default network of the wallet's family). An asset the network does not have is 400 INVALID_PARAMETERS naming `asset`; a payment in another asset than this one is refused with INVALID_PAYMENT_PROOF `asset_mismatch` before anything is consumed or settled (a gate402 proof is always native; an x402 `exact` payload always a token). The amount is read in this asset's decimals.",
});
export const FacilitatorUrlField = Type.String({
  format: 'uri',
  maxLength: 2048,
  description:
    "x402 payloads only: the x402 facilitator that verifies and settles them (POST <url>/verify, <url>/settle) instead of the built-in one. https, public addresses only (ALLOW_PRIVATE_OUTBOUND_URLS lifts that), bounded by `timeout`. When its settle answer is lost (a timeout, a dropped connection) or it refuses a payload it settled before, the chain decides: the payload's transfer, landed and successful within the last hour, is recorded once as this payment.",
});
export const FacilitatorAuthorizationField = Type.String({
  minLength: 1,
  maxLength: 1024,
  description:
    'Sent as the Authorization header to `facilitatorUrl` only (e.g. `Bearer <its API key>`); never logged.',
});

const ReceiveBody = Type.Object(
  {
    walletAddress: Address('Receiving wallet: one of your wallets (custodial or watch-only).'),
    paymentProof: PaymentProofField,
    expectedAmount: ExpectedAmountField,
    asset: Type.Optional(AssetField),
    resource: Type.Optional(ReceiveResource),
    network: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description:
          'CAIP-2 network id (GET /networks) the payment must be on. A proof or x402 payment on another network is refused with INVALID_PAYMENT_PROOF `network_mismatch` before anything is consumed; absent: the default network of the wallet family (an address is valid on every network of its family).',
      }),
    ),
    facilitatorUrl: Type.Optional(FacilitatorUrlField),
    facilitatorAuthorization: Type.Optional(FacilitatorAuthorizationField),
    timeout: Type.Optional(
      Type.Number({ minimum: 1, maximum: MAX_RECEIVE_TIMEOUT_SECONDS, description: 'Seconds; default 30.' }),
    ),
  },
  { additionalProperties: false },
);

const ReceiveResult = Type.Object(
  {
    success: Type.Literal(true),
    verified: Type.Literal(true),
    paymentId: Type.String({ description: "The seller's own payment id for this receipt." }),
    signature: Type.String(),
    amountReceived: Type.Number(),
    sender: Type.String(),
    status: Type.String(),
    blockHeight: Type.Union([Type.Integer(), Type.Null()]),
    timestamp: Type.Integer(),
    verificationTime: Type.String({ examples: ['42ms'] }),
    network: Type.String(),
    asset: AssetSchema,
  },
  { $id: 'ReceiveResult', title: 'ReceiveResult' },
);

/** On a received payment: its refunds (POST /payment/refund). */
const RefundsSchema = Type.Object(
  {
    refunded: Type.Number({
      description: 'Given back for good: refunds confirmed or finalized, in whole units of the asset.',
    }),
    pending: Type.Number({ description: 'Refunds under way (pending or submitted).' }),
    refundable: Type.Number({ description: 'What a further refund may still give back.' }),
    payments: Type.Array(
      Type.Object({
        paymentId: Type.String(),
        amount: Type.Number(),
        status: Type.String(),
        timestamp: Type.Integer(),
      }),
      { description: 'Every refund of the payment, oldest first, whatever its state.' },
    ),
  },
  { $id: 'Refunds', title: 'Refunds' },
);

const PaymentType = Type.Union([Type.Literal('sent'), Type.Literal('received'), Type.Literal('refund')], {
  description:
    '`refund`: a payment back to the payer of one the account received (POST /payment/refund); it is sent money, listed with `sent`.',
});

const PaymentSchema = Type.Object(
  {
    paymentId: Type.String(),
    type: PaymentType,
    network: Type.String(),
    signature: Type.Union([Type.String(), Type.Null()]),
    status: Type.String({ enum: [...PAYMENT_STATUSES] }),
    amount: Type.Number(),
    sender: Type.String(),
    recipient: Type.String(),
    resource: Type.Optional(Type.String()),
    blockHeight: Type.Union([Type.Integer(), Type.Null()]),
    confirmations: Type.Integer({ description: 'Blocks since (and including) the one holding the payment.' }),
    timestamp: Type.Integer(),
    metadata: Type.Optional(Type.Object({}, { additionalProperties: true })),
    asset: AssetSchema,
    refundOf: Type.Optional(Type.String({ description: 'On a refund: the payment it refunds.' })),
    refundReason: Type.Optional(Type.String({ description: 'On a refund: the reason given.' })),
    heldUntil: Type.Optional(
      Type.Literal('refunded_payment_finalized', {
        description:
          'On a refund of a payment that was only `confirmed`: its transaction is held (not signed, not broadcast; status `pending`) until the refunded payment is `finalized`, then sent. If that payment is reverted instead, the refund ends `failed` having sent nothing.',
      }),
    ),
    failureReason: Type.Optional(
      Type.String({
        description:
          'On a `failed` refund: why (e.g. cancelled while held because the refunded payment was reverted).',
      }),
    ),
    refunds: Type.Optional(RefundsSchema),
  },
  { $id: 'Payment', title: 'Payment' },
);

const HistoryEntry = Type.Object({
  paymentId: Type.String(),
  type: PaymentType,
  refundOf: Type.Optional(Type.String({ description: 'On a refund: the payment it refunds.' })),
  amount: Type.Number(),
  recipient: Type.Optional(Type.String()),
  sender: Type.Optional(Type.String()),
  resource: Type.Optional(Type.String()),
  status: Type.String(),
  timestamp: Type.Integer(),
  signature: Type.Union([Type.String(), Type.Null()]),
  network: Type.String(),
  asset: AssetSchema,
});

export interface PaymentRouteDeps {
  readonly send: SendPaymentService;
  readonly receive: ReceivePaymentService;
  readonly query: PaymentQueryService;
}

/** Lightning mode (spec §4.1–4.4). */
export async function paymentRoutes(app: FastifyInstance, deps: PaymentRouteDeps) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/payment/send',
    {
      config: { feature: 'payments', idempotent: true },
      schema: {
        operationId: 'sendPayment',
        tags: ['payments'],
        summary: 'Pay from a custodial wallet: the gateway checks, builds, signs and broadcasts.',
        description:
          'Waits for `confirmed` for a bounded time; a slower confirmation answers `submitted` and the payment confirms later (see status). Send an `Idempotency-Key` header to retry safely.',
        body: SendBody,
        response: { 200: SendResult },
      },
    },
    async (request) => {
      const { account, key } = callerOf(request);
      const body = request.body;
      checkMetadataSize(body.metadata);
      return deps.send.send(account.id, body, request.idempotencyKey, key.id);
    },
  );

  r.post(
    '/payment/receive',
    {
      config: { feature: 'payments', idempotent: true },
      schema: {
        operationId: 'receivePayment',
        tags: ['payments'],
        summary: 'Verify a payment proof for one of your wallets and record the payment (once per proof).',
        body: ReceiveBody,
        response: { 200: ReceiveResult },
      },
    },
    async (request) => {
      try {
        return await deps.receive.receive(callerOf(request).account.id, request.body, request.idempotencyKey);
      } catch (error) {
        // An x402 settlement still pending may yet confirm, and a facilitator at facilitatorUrl that could
        // not be reached (or whose answer was lost) may have settled all the same: the same request
        // retried with its key looks again (X402ReceiveService), so this answer is not the key's for good.
        if (error instanceof GatewayError && !error.final) request.idempotencyUnfinished = true;
        throw error;
      }
    },
  );

  r.get(
    '/payment/status/:paymentId',
    {
      config: { feature: 'status' },
      schema: {
        operationId: 'getPaymentStatus',
        tags: ['payments'],
        summary: 'A payment of your account, with confirmations from the chain.',
        params: Type.Object({
          paymentId: Type.String({
            pattern: '^pay_[0-9A-HJKMNP-TV-Z]{26}$',
            'x-error': 'must be a payment id (pay_…)',
          }),
        }),
        response: { 200: PaymentSchema },
      },
    },
    async (request) => deps.query.status(callerOf(request).account.id, request.params.paymentId),
  );

  r.get(
    '/payment/history/:walletAddress',
    {
      config: { feature: 'history' },
      schema: {
        operationId: 'getPaymentHistory',
        tags: ['payments'],
        summary: 'Sent and received payments of one of your wallets, newest first.',
        params: Type.Object({ walletAddress: Address('One of your wallets.') }),
        querystring: Type.Object(
          {
            type: Type.Union([Type.Literal('sent'), Type.Literal('received'), Type.Literal('all')], {
              default: 'all',
            }),
            limit: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
            offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            walletAddress: Type.String(),
            total: Type.Integer({ description: 'All matching payments.' }),
            limit: Type.Integer(),
            offset: Type.Integer(),
            payments: Type.Array(HistoryEntry),
          }),
          304: Type.Null({
            description:
              'The page is unchanged since the `ETag` given in `If-None-Match` (a client polling history).',
          }),
        },
      },
    },
    async (request, typedReply) => {
      // The page comes as JSON text, rendered by this route's own serializer once per change of the
      // wallet's history (PaymentQueryService.renderedHistory), and is sent as it is: the reply's
      // types expect the page's object, so it is sent through the untyped reply.
      const reply: FastifyReply = typedReply;
      const serialize = reply.getSerializationFunction('200');
      if (serialize === undefined) throw new Error('GET /payment/history has no serializer for 200');
      const page = await deps.query.renderedHistory(
        callerOf(request).account.id,
        { walletAddress: request.params.walletAddress, ...request.query },
        (body: HistoryPage) => serialize({ ...body }),
      );
      if (page.etag !== '') {
        reply.header('etag', page.etag);
        if (noneMatch(request.headers['if-none-match'], page.etag)) return reply.code(304).send();
      }
      return reply.type('application/json; charset=utf-8').send(page.body);
    },
  );
}
