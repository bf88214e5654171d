import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { GatewayError, toErrorBody } from '../../domain/gateway-error.ts';
import type { X402Reason } from '../../domain/x402-reasons.ts';
import {
  BAZAAR,
  type BazaarResponse,
  type DiscoveryCatalogue,
  searchWords,
} from '../../services/facilitator/discovery-catalogue.ts';
import type { SettleAnswer, VerifyAnswer } from '../../services/facilitator/facilitator-answers.ts';
import type { FacilitatorService } from '../../services/facilitator/facilitator-service.ts';
import {
  type IdentifiedOutcome,
  identifierOf,
  PAYMENT_IDENTIFIER,
  type PaymentIdentifiers,
} from '../../services/facilitator/payment-identifier.ts';
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

/**
 * The payment-identifier extension refused the request (specs/extensions/payment_identifier.md: 409
 * Conflict): the gateway's error body and, in the same object, an x402 VerifyResponse or SettleResponse,
 * so a stock `HTTPFacilitatorClient` reads its reason as it reads any refusal answered with a non-200.
 */
const IdentifierConflictResponse = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Type.String({
        description:
          '`PAYMENT_IDENTIFIER_REUSED` (the identifier was used with another payload or requirements) or `IDEMPOTENCY_KEY_IN_USE` (a request with it is still running; retry).',
      }),
      message: Type.String(),
      retryAfter: Type.Optional(Type.Integer()),
      requestId: Type.Optional(Type.String()),
    }),
    isValid: Type.Optional(Type.Literal(false)),
    invalidReason: Type.Optional(Type.String()),
    invalidMessage: Type.Optional(Type.String()),
    errorReason: Type.Optional(
      Type.String({
        description: 'x402 reason: `payment_identifier_conflict` or `payment_identifier_in_use`.',
      }),
    ),
    errorMessage: Type.Optional(Type.String()),
    transaction: Type.Optional(Type.String({ description: 'Empty: nothing was sent.' })),
    network: Type.Optional(Type.String()),
  },
  {
    description:
      "The payload's `payment-identifier` id was used by this account with another payload or other requirements (PAYMENT_IDENTIFIER_REUSED), or a request with it is still running after the settle wait (IDEMPOTENCY_KEY_IN_USE). Nothing was verified or sent.",
  },
);

/** x402's DiscoveryResource: one catalogued resource. */
const DiscoveryResource = Type.Object(
  {
    resource: Type.String({
      description: "The resource's URL, its query left out (a valid route template in place of its path).",
    }),
    type: Type.String({ description: '`http` or `mcp`.' }),
    x402Version: Type.Integer(),
    accepts: Type.Array(Type.Object({}, { additionalProperties: true }), {
      description: 'The payment requirements the resource was last paid with.',
    }),
    lastUpdated: Type.String({
      description: 'ISO 8601: when the resource was last paid for with this declaration.',
    }),
    description: Type.Optional(Type.String()),
    mimeType: Type.Optional(Type.String()),
    serviceName: Type.Optional(Type.String()),
    tags: Type.Optional(Type.Array(Type.String())),
    iconUrl: Type.Optional(
      Type.String({
        description:
          "The seller's `resource.iconUrl`: an http(s) URL on a DNS name (not an address, not this machine), at most 2,048 characters.",
      }),
    ),
    extensions: Type.Object(
      {},
      {
        additionalProperties: true,
        description: '`bazaar`: the declaration as the seller made it (`info`, `schema`, `routeTemplate`).',
      },
    ),
  },
  { $id: 'X402DiscoveryResource', title: 'X402DiscoveryResource' },
);

const DiscoveryFilters = {
  type: Type.Optional(Type.String({ maxLength: 16, description: '`http` or `mcp`.' })),
  payTo: Type.Optional(Type.String({ maxLength: 128, description: "The requirements' payTo." })),
  scheme: Type.Optional(Type.String({ maxLength: 32 })),
  network: Type.Optional(Type.String({ maxLength: 64, description: 'CAIP-2 id.' })),
  extensions: Type.Optional(
    Type.String({
      maxLength: 64,
      description: 'An extension the resource carries: every catalogued one carries `bazaar`.',
    }),
  ),
};

const DISCOVERY_AUTH =
  "With an API key (Bearer), the caller's account's own catalogue; without one, every account's (the public view) unless the operator turned it off (X402_DISCOVERY_PUBLIC=false): then 401. A stock `withBazaar(HTTPFacilitatorClient)` sends its `createAuthHeaders().bazaar` headers here.";

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
export async function facilitatorRoutes(
  app: FastifyInstance,
  deps: {
    facilitator: FacilitatorService;
    discovery: DiscoveryCatalogue;
    paymentIdentifiers: PaymentIdentifiers;
  },
) {
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
    async () => {
      const answer = deps.facilitator.supported();
      // The extensions this routes file serves on every network (see verify, settle and discovery).
      const extensions = [...new Set([...answer.extensions, BAZAAR, PAYMENT_IDENTIFIER])];
      return { ...answer, extensions };
    },
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
        response: { 200: VerifyResponse, 409: IdentifierConflictResponse },
      },
    },
    async (request, reply) => {
      const { paymentPayload, paymentRequirements } = request.body;
      let bazaar: BazaarResponse | undefined;
      const verify = async (): Promise<VerifyAnswer> => {
        const answer = await deps.facilitator.verify(paymentPayload, paymentRequirements);
        if (answer.isValid) bazaar = deps.discovery.check(paymentPayload, paymentRequirements);
        return answer;
      };
      const identifier = identifierOf(paymentPayload);
      if (identifier.kind === 'invalid')
        return { isValid: false, invalidReason: 'invalid_payload', invalidMessage: identifier.message };
      if (identifier.kind === 'none') return withBazaar(reply, await verify(), bazaar);
      const outcome = await deps.paymentIdentifiers.run(
        callerOf(request).account.id,
        'verify',
        identifier.id,
        { paymentPayload, paymentRequirements },
        async () => {
          const answer = await verify();
          return {
            body: answer,
            final:
              answer.invalidReason !== 'settlement_pending' &&
              answer.invalidReason !== 'unexpected_verify_error',
          };
        },
      );
      // A verify says what holds now: a kept "valid" is never replayed, for the payload may have been
      // settled since, and a buyer resending a settled payload under its own identifier would be answered
      // valid again (a stock seller then serves it once more). It is looked at afresh; another payload
      // under the identifier is still refused (409), and a refusal is replayed.
      if (outcome.kind === 'replayed' && (JSON.parse(outcome.body) as VerifyAnswer).isValid === true)
        return withBazaar(reply, await verify(), bazaar);
      return identified(request, reply, outcome, bazaar, (reason, message) => ({
        isValid: false,
        invalidReason: reason,
        invalidMessage: message,
      }));
    },
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
        response: { 200: SettleResponse, 409: IdentifierConflictResponse, 429: FeeBudgetExceededResponse },
      },
    },
    async (request, reply) => {
      const { paymentPayload, paymentRequirements } = request.body;
      const accountId = callerOf(request).account.id;
      const { network } = paymentRequirements as { network?: unknown };
      const networkAsSent = typeof network === 'string' ? network : '';
      let bazaar: BazaarResponse | undefined;
      const settle = async (): Promise<SettleAnswer & { paymentId?: string }> => {
        // Settled for the caller's account: its payment, its fee budget (see FacilitatorService).
        const answer = await deps.facilitator.settle(paymentPayload, paymentRequirements, accountId);
        // Catalogued only once its payment is settled, for the account that settled it; an upto settle
        // of 0 moved nothing (no chain, no fee), so it is no payment to list a resource by.
        if (answer.success && answer.amount !== '0') {
          bazaar = await deps.discovery
            .catalogue(accountId, paymentPayload, paymentRequirements)
            .catch((error: unknown) => {
              request.log.error({ err: error }, 'could not catalogue a bazaar declaration');
              return { status: 'rejected' as const, rejectedReason: 'the catalogue could not be written' };
            });
        }
        return answer;
      };
      try {
        const identifier = identifierOf(paymentPayload);
        if (identifier.kind === 'invalid')
          return {
            success: false,
            errorReason: 'invalid_payload',
            errorMessage: identifier.message,
            transaction: '',
            network: networkAsSent,
          };
        if (identifier.kind === 'none') return withBazaar(reply, await settle(), bazaar);
        const outcome = await deps.paymentIdentifiers.run(
          accountId,
          'settle',
          identifier.id,
          { paymentPayload, paymentRequirements },
          async () => {
            const answer = await settle();
            // Still pending, or not tried (a hook failed: nothing was sent): a retry with the identifier
            // looks again.
            return {
              body: answer,
              final:
                answer.errorReason !== 'settlement_pending' &&
                answer.errorReason !== 'unexpected_settle_error',
            };
          },
        );
        // A success is answered once, to the settle that moved the money. The buyer writes the payload
        // and its identifier, so a replayed success would let a buyer resending one payment to a stock
        // seller (which serves on every success) be served again: copies verified before the payment
        // settled, then settled after it, would each get one. A replay says the payment was settled, by
        // which transaction, as a settle without an identifier does (review-29).
        const replayed = outcome.kind === 'replayed' ? (JSON.parse(outcome.body) as SettleAnswer) : undefined;
        if (replayed?.success === true) {
          return reply
            .code(200)
            .header('idempotent-replayed', 'true')
            .send({
              ...replayed,
              success: false,
              errorReason: 'duplicate_settlement',
              errorMessage: `this payment was already settled by ${replayed.transaction}`,
            });
        }
        return identified(request, reply, outcome, bazaar, (reason, message) => ({
          success: false,
          errorReason: reason,
          errorMessage: message,
          transaction: '',
          network: networkAsSent,
        }));
      } catch (error) {
        if (!(error instanceof GatewayError) || error.code !== 'FEE_BUDGET_EXCEEDED') throw error;
        if (error.retryAfter !== undefined) reply.header('retry-after', String(error.retryAfter));
        return reply.code(429).send({
          ...toErrorBody(error, request.id),
          errorReason: 'fee_budget_exceeded',
          errorMessage: error.message,
          transaction: '',
          network: networkAsSent,
        });
      }
    },
  );

  routes.get(
    '/facilitator/discovery/resources',
    {
      config: { ...config, keyOptional: true },
      schema: {
        operationId: 'listDiscoveryResources',
        tags: ['facilitator'],
        summary: 'x402 bazaar: the resources sellers settling here declared, newest first.',
        description: `The catalogue of the \`bazaar\` discovery extension: each resource a seller declared in its 402 (\`extensions.bazaar\`, echoed by the buyer in the payment payload) once a payment for it settled here for the seller's account — never from a payment that failed, is pending or was only verified. One entry per account and resource (its URL without query; an MCP tool per tool name); a later settlement's declaration replaces it. ${DISCOVERY_AUTH} Filters are exact matches; \`limit\` 1 to 100 (default 20).`,
        querystring: Type.Object(
          {
            ...DiscoveryFilters,
            limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
            offset: Type.Integer({ minimum: 0, maximum: 100_000, default: 0 }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object(
            {
              x402Version: Type.Literal(2),
              items: Type.Array(DiscoveryResource),
              pagination: Type.Object({
                limit: Type.Integer(),
                offset: Type.Integer(),
                total: Type.Integer(),
              }),
            },
            { $id: 'X402DiscoveryResourcesResponse', title: 'X402DiscoveryResourcesResponse' },
          ),
        },
      },
    },
    async (request, reply) => {
      const view = discoveryView(request, reply, deps.discovery);
      if (view === null) return reply;
      const { limit, offset, ...filters } = request.query;
      const { items, total } = await deps.discovery.list(view, { ...filters, limit, offset });
      return { x402Version: 2 as const, items, pagination: { limit, offset, total } };
    },
  );

  routes.get(
    '/facilitator/discovery/search',
    {
      config: { ...config, keyOptional: true },
      schema: {
        operationId: 'searchDiscoveryResources',
        tags: ['facilitator'],
        summary: 'x402 bazaar: catalogued resources whose text holds every word of a query.',
        description: `The search of the stock \`withBazaar\` client: resources of the catalogue (as GET /facilitator/discovery/resources lists them) whose URL, description, service name, tags or MCP tool name contain every word of \`query\` (case-insensitive; at most 8 words), newest first. \`limit\` 1 to 100 (default 20); \`pagination.cursor\` of the answer, given back as \`cursor\`, is the next page (null: none). ${DISCOVERY_AUTH}`,
        querystring: Type.Object(
          {
            query: Type.String({ minLength: 1, maxLength: 256 }),
            ...DiscoveryFilters,
            limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
            cursor: Type.Optional(
              Type.String({ pattern: '^[0-9]{1,6}$', description: 'From the previous page.' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object(
            {
              x402Version: Type.Literal(2),
              resources: Type.Array(DiscoveryResource),
              partialResults: Type.Boolean({
                description: 'Always false: every match is reachable by its cursor.',
              }),
              pagination: Type.Object({
                limit: Type.Integer(),
                cursor: Type.Union([Type.String(), Type.Null()]),
              }),
            },
            { $id: 'X402DiscoverySearchResponse', title: 'X402DiscoverySearchResponse' },
          ),
        },
      },
    },
    async (request, reply) => {
      const view = discoveryView(request, reply, deps.discovery);
      if (view === null) return reply;
      const { query, limit, cursor, ...filters } = request.query;
      const offset = cursor === undefined ? 0 : Number(cursor);
      const { items, total } = await deps.discovery.list(
        view,
        { ...filters, limit, offset },
        searchWords(query),
      );
      const next = offset + items.length;
      return {
        x402Version: 2 as const,
        resources: items,
        partialResults: false,
        pagination: { limit, cursor: next < total && items.length > 0 ? String(next) : null },
      };
    },
  );
}

/**
 * Whose catalogue a discovery request sees: the caller's account (a key was given and admitted), or
 * every account's (undefined) when the public view is on. Null: refused here (401) and answered.
 */
function discoveryView(
  request: FastifyRequest,
  reply: FastifyReply,
  discovery: DiscoveryCatalogue,
): string | undefined | null {
  if (request.caller !== undefined) return request.caller.account.id;
  if (discovery.publicListing) return undefined;
  reply.header('www-authenticate', 'Bearer realm="gate402"');
  void reply.code(401).send(
    toErrorBody(
      new GatewayError('UNAUTHORIZED', {
        message:
          "This gateway's public discovery listing is off (X402_DISCOVERY_PUBLIC=false): ask with an API key for your account's catalogue.",
      }),
      request.id,
    ),
  );
  return null;
}

/** The x402 EXTENSION-RESPONSES header (base64 JSON keyed by extension) with the bazaar outcome. */
function withBazaar<T>(reply: FastifyReply, answer: T, bazaar: BazaarResponse | undefined): T {
  if (bazaar !== undefined)
    reply.header('extension-responses', Buffer.from(JSON.stringify({ [BAZAAR]: bazaar })).toString('base64'));
  return answer;
}

/**
 * The answer of a verify or settle that carried a payment identifier: this request's own, the first
 * answer replayed as it was (with `Idempotent-Replayed: true`), or the 409 of the spec, whose x402 part
 * `x402` makes (VerifyResponse or SettleResponse fields).
 */
function identified<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  outcome: IdentifiedOutcome<T>,
  bazaar: BazaarResponse | undefined,
  x402: (reason: X402Reason, message: string) => Record<string, unknown>,
): T | FastifyReply {
  switch (outcome.kind) {
    case 'answered':
      return withBazaar(reply, outcome.body, bazaar);
    case 'replayed':
      return reply
        .code(200)
        .header('idempotent-replayed', 'true')
        .type('application/json')
        .send(outcome.body);
    case 'unreadable':
      return reply.code(200).send(x402('invalid_payload', 'the payment payload nests too deeply to be read'));
    case 'conflict': {
      const error = new GatewayError('PAYMENT_IDENTIFIER_REUSED');
      return reply.code(409).send({
        ...toErrorBody(error, request.id),
        ...x402('payment_identifier_conflict', `${PAYMENT_IDENTIFIER}: ${error.message}`),
      });
    }
    case 'busy': {
      const error = new GatewayError('IDEMPOTENCY_KEY_IN_USE', { retryAfter: 1 });
      reply.header('retry-after', '1');
      return reply.code(409).send({
        ...toErrorBody(error, request.id),
        ...x402(
          'payment_identifier_in_use',
          `${PAYMENT_IDENTIFIER}: a request with this id is still running; retry`,
        ),
      });
    }
  }
}
