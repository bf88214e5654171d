import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { LocalReceiveService } from '../../services/payments/local/local-receive.ts';
import type { LocalSendService } from '../../services/payments/local/local-send.ts';
import { MAX_RECEIVE_TIMEOUT_SECONDS } from '../../services/payments/receive-payment.ts';
import { callerOf } from '../plugins/authentication.ts';
import {
  Address,
  AssetField,
  AssetSchema,
  checkMetadataSize,
  ExpectedAmountField,
  FacilitatorUrlField,
  Network,
  PaymentProofField,
  ReceiveResource,
  SendBody,
  SendFee,
} from './payments.ts';

const TransactionSendBody = Type.Object(
  {
    ...SendBody.properties,
    walletAddress: Address(
      'The payer: any Solana (base58) or EVM (0x…) address. It signs; the gateway never holds its key.',
    ),
  },
  { additionalProperties: false },
);

const Base64Transaction = Type.String({
  description:
    'Base64 of the unsigned transaction: on Solana the wire bytes of a v0 transaction with empty signature slots; on EVM an RLP-serialised EIP-1559 (type 2) transaction without signature (parse it, e.g. viem `parseTransaction`, and sign it). Sign with your own key and broadcast through any RPC endpoint of the network (GET /networks).',
});
const LastValidBlockHeight = Type.Integer({
  description: 'The transaction can land only while the block height is at most this.',
});
const ExpiresAt = Type.Integer({
  description:
    'Unix ms: do not send after this (at most 60 s after building, never after the blockhash is estimated to expire); build a new one. On EVM nothing on chain enforces it (a signed transaction stays valid until its nonce is used): to be sure an unsent one never lands, spend its nonce.',
});

const TransactionSendResult = Type.Object(
  {
    success: Type.Literal(true),
    paymentId: Type.String(),
    transaction: Base64Transaction,
    lastValidBlockHeight: LastValidBlockHeight,
    expiresAt: ExpiresAt,
    paymentProof: Type.String({
      description:
        'gate402 proof (`0x` hex) naming the transaction by its reference; the seller redeems it once the transaction has landed.',
    }),
    estimatedConfirmation: Type.String(),
    amount: Type.Number(),
    recipient: Type.String(),
    status: Type.String({ description: '`pending` until the transaction is seen on chain.' }),
    reference: Type.String({
      description:
        'Identifies this transaction on chain: a read-only account (Solana), or the first 20 bytes of the calldata (EVM).',
    }),
    network: Type.String(),
    asset: AssetSchema,
    fee: SendFee,
  },
  { $id: 'TransactionSendResult', title: 'TransactionSendResult' },
);

const TransactionReceiveBody = Type.Object(
  {
    walletAddress: Address('Receiving wallet: one of your wallets; it pays the receipt fee and signs it.'),
    paymentProof: PaymentProofField,
    expectedAmount: ExpectedAmountField,
    asset: Type.Optional(AssetField),
    resource: Type.Optional(ReceiveResource),
    facilitatorUrl: Type.Optional(FacilitatorUrlField),
    priorityFee: Type.Optional(
      Type.Number({
        minimum: 0.00001,
        maximum: 0.01,
        description: 'Total priority fee of the receipt; default: from recent fees on the network.',
      }),
    ),
    timeout: Type.Optional(
      Type.Number({
        minimum: 1,
        maximum: MAX_RECEIVE_TIMEOUT_SECONDS,
        description: "Seconds to wait for the buyer's transaction to land; default 30.",
      }),
    ),
    network: Type.Optional(Network),
  },
  { additionalProperties: false },
);

const TransactionReceiveResult = Type.Object(
  {
    success: Type.Literal(true),
    verified: Type.Literal(true),
    paymentId: Type.String({ description: "The seller's own payment id for this receipt." }),
    transaction: Base64Transaction,
    lastValidBlockHeight: LastValidBlockHeight,
    expiresAt: ExpiresAt,
    signature: Type.Optional(
      Type.String({
        description:
          "gate402 proofs: the buyer's transaction. Absent for x402 payloads: `transaction` is the buyer's transaction, and its id is the signature your wallet adds.",
      }),
    ),
    amountReceived: Type.Number({ description: 'In whole units of `asset`.' }),
    sender: Type.String(),
    status: Type.String({
      description: '`pending` until the receipt (x402: the payment itself) lands; then `confirmed`.',
    }),
    reference: Type.Optional(
      Type.String({ description: 'gate402 proofs: finds the receipt on chain. Absent for x402 payloads.' }),
    ),
    network: Type.String(),
    asset: AssetSchema,
  },
  { $id: 'TransactionReceiveResult', title: 'TransactionReceiveResult' },
);

export interface TransactionRouteDeps {
  readonly localSend: LocalSendService;
  readonly localReceive: LocalReceiveService;
}

/** Local transaction mode (spec §4.6, §4.7): unsigned transactions the caller signs and broadcasts. */
export async function transactionRoutes(app: FastifyInstance, deps: TransactionRouteDeps) {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(
    '/transaction/send',
    {
      config: { feature: 'transactions', idempotent: true },
      schema: {
        operationId: 'buildSendTransaction',
        tags: ['transactions'],
        summary: 'Build an unsigned payment transaction for your own wallet to sign and broadcast.',
        description:
          "Same rules as /payment/send, but `walletAddress` may be any address: it is the fee payer and signer, and its key never reaches the gateway. On Solana the transaction carries a compute-unit limit and price, the transfer with a fresh read-only reference account, and a memo with the paymentId. On EVM it is an EIP-1559 transfer of `amount` (in wei) with the sender's next nonce, whose calldata is the reference (20 bytes) followed by the paymentId; you may re-sign it with another nonce or higher fees. The payment is `pending` until the gateway sees the transaction on chain by its reference (and checks it is exactly the one built: payer, recipient, amount, memo); then `confirmed` and `finalized`. Not seen before `lastValidBlockHeight` or `expiresAt`: `expired` (on EVM not while the sender has transactions waiting in the node's pool and `lastValidBlockHeight` is not passed, since one broadcast in time may still be mined). Send an `Idempotency-Key` header to get the same transaction on a retry.",
        body: TransactionSendBody,
        response: { 200: TransactionSendResult },
      },
    },
    async (request) => {
      const body = request.body;
      checkMetadataSize(body.metadata);
      const { account, key } = callerOf(request);
      return deps.localSend.build(account.id, body, request.idempotencyKey, key.id);
    },
  );

  r.post(
    '/transaction/receive',
    {
      config: { feature: 'transactions', idempotent: true },
      schema: {
        operationId: 'buildReceiveTransaction',
        tags: ['transactions'],
        summary: 'Verify a payment proof and build an unsigned receipt for your wallet to sign.',
        description:
          "Verifies the proof exactly like /payment/receive (waiting up to `timeout` for the buyer's transaction to land). The answer is a receipt transaction, fee payer = `walletAddress`: a memo naming this receipt's paymentId and the buyer's paymentId it accepts, and a zero-value transfer to itself that carries a fresh reference (on EVM both in the calldata of one 0 ETH transfer to itself). **The proof is consumed when the receipt lands on chain, not before**: until then the received payment is `pending`; once the gateway sees the receipt it becomes `confirmed` and the proof can never be redeemed again (by either endpoint). If the receipt is not sent before `expiresAt`, the payment becomes `expired` and the proof stays redeemable. If the proof was redeemed elsewhere before the receipt landed, the payment becomes `failed`.\n\n" +
          "**x402 payloads** (`exact`; a v1 `X-PAYMENT` or v2 `PAYMENT-SIGNATURE` value as `paymentProof`): your wallet (`walletAddress`, also the `payTo`) submits the payment itself and pays its fee; no facilitator is involved. Solana: the buyer builds its transaction with `extra.feePayer` = `walletAddress`; the gateway verifies it like its facilitator does (instruction layout, exact amount to your token account, the buyer's signature, a simulation), except that the fee payer must be your wallet, and answers that very transaction in `transaction`, the buyer's signature in place and your fee-payer slot empty: sign it and broadcast it; its id is your signature. EVM (EIP-3009): the gateway verifies the authorization (simulated as your wallet submitting it) and answers an unsigned EIP-1559 transaction from your wallet to the token calling `transferWithAuthorization` with your next nonce; sign it and broadcast it. EVM Permit2 (`extra.assetTransferMethod: \"permit2\"`; the buyer approved Permit2 for the token): the same checks as the facilitator's (simulated as your wallet), and an unsigned EIP-1559 transaction from your wallet calling `settle` on x402's exact Permit2 proxy (0x402085c248EeA27D92E8b30b2C58ed07f9E20001) with the buyer's permit; any caller may settle, and the permit fixes recipient and amount. State the token in `asset` (e.g. `USDC`; without it the price is native and the payload is refused `asset_mismatch`); `expectedAmount` is in its whole units. The payment is `pending` until the gateway sees it on chain (Solana: the transaction by its message; EVM: the authorization's AuthorizationUsed event in a transaction that moved its value to you — a nonce spent by another authorization of the buyer's makes the receipt `expired` — or a settle of the permit spending its Permit2 nonce, whoever submitted it), then `confirmed`, and the payload is consumed then, once: building it again answers `INVALID_PAYMENT_PROOF` (`already_used`). What the payload pays (token, recipient, amount) is checked first: one that does not pay `walletAddress` is refused for that (`PAYMENT_VERIFICATION_FAILED`, e.g. `invalid_exact_svm_payload_recipient_mismatch`) whether or not it was used or has a pending receipt, so nobody it does not pay learns either. One payload has one receipt at a time: while it is `pending`, the same payload again (even two calls at the same instant) answers that same receipt, with the same `paymentId`, `transaction` and `expiresAt`, and records nothing new (asked for another `resource` than the receipt's: `INVALID_PAYMENT_PROOF`, `resource_mismatch`); once it is `failed` or `expired`, a new receipt is built only if the payload still verifies (can still land). If gate402's facilitator settled the same EVM authorization or permit, it records the payment and the receipt fails. It becomes `expired` only when it can never land: Solana past `lastValidBlockHeight` (an upper bound of the buyer's blockhash), EVM once a block passes the authorization's validBefore or the permit's deadline unused (`expiresAt` is no later); a late broadcast before then still pays you. `facilitatorUrl` and `priorityFee` do not apply (400); a wallet that cannot pay the network fee is 422 `INSUFFICIENT_BALANCE`.",
        body: TransactionReceiveBody,
        response: { 200: TransactionReceiveResult },
      },
    },
    async (request) => deps.localReceive.build(callerOf(request).account.id, request.body),
  );
}
