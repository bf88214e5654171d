import { randomUUID } from 'node:crypto';
import { encodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { BrowserPaywall, type PaywallPageOptions } from './browser-paywall/paywall-page.ts';
import { fromAtomicUnits, toAtomicUnits, toJsonNumber } from './decimal-amount.ts';
import { declaredExtensions } from './declared-extensions.ts';
import { EXACT_SCHEME, type ExactTokenOption, exactRequirement } from './exact-offer.ts';
import type { Gate402Client, ResponseOf } from './gate402-client.ts';
import { Gate402Error, Gate402TransportError, isGate402Error } from './gate402-error.ts';
import { NetworkCatalog, type NetworkInfo } from './network-catalog.ts';
import { PaywallHookRun, PaywallHookStop, type PaywallHooks } from './paywall-hooks.ts';
import {
  escrowPhase,
  escrowsBeforeHandler,
  UPTO_SCHEME,
  type UptoPayment,
  type UptoTokenOption,
  uptoPayment,
  uptoRequirement,
} from './upto-offer.ts';
import { paymentRequiredAnswer, type V1Requirement, v1Requirements } from './x402/challenge.ts';
import {
  GATE402_NATIVE_SCHEME,
  isGate402NativePayload,
  NATIVE_ASSET,
  sameRequirement,
} from './x402/gate402-native.ts';
import { EXPOSED_HEADERS, PAYMENT_RESPONSE_HEADER, X_PAYMENT_RESPONSE_HEADER } from './x402/headers.ts';
import { type PresentedPayment, readPresentedPayment } from './x402/presented-payment.ts';

/** The gateway's send limits (spec §4.1): a price outside them could not be paid with POST /payment/send. */
const MIN_PRICE = 0.001;
const MAX_PRICE = 100;
/** Payments left unchecked (no answer, or pending) that a resource remembers; beyond it the oldest is forgotten. */
const MAX_UNFINISHED = 1_000;

export interface ProtectOptions {
  /** The price in the network's native currency (SOL, ETH), as a decimal: `'0.01'` or `0.01`. 0.001 to 100. */
  readonly price: string | number;
  /** The wallet that is paid: one of the seller's wallets on its gateway account (custodial or watch-only). */
  readonly payTo: string;
  /** The URL the payment is for; default the request's own URL. A proof made for another resource is refused. */
  readonly resource?: string;
  /** CAIP-2 network id; default the gateway's default network for `payTo`'s address family. */
  readonly network?: string;
  /** Shown to buyers in the 402. */
  readonly description?: string;
  readonly mimeType?: string;
  /** How long a buyer may take to pay; default 60 s. */
  readonly maxTimeoutSeconds?: number;
  /**
   * Also offer x402's standard `exact` token payment (v2 clients such as `@x402/fetch`), verified and
   * settled by the gateway's facilitator (the seller's key needs the Premium plan).
   */
  readonly exact?: ExactTokenOption;
  /**
   * Also offer x402's `upto` token payment (usage-based): the buyer signs `upto.max`, the facilitator
   * verifies it before the handler runs (on Solana the maximum also moves into escrow then), and the
   * handler states what the request cost with `payment.settle(amount)` (the payment the adapter attaches,
   * `scheme: 'upto'`), which settles that, once.
   *
   * @example
   * app.get('/llm', protect({ price: '0.01', payTo, upto: { asset: usdc, max: '0.05' } }), async (req, res) => {
   *   const settled = await res.locals.payment.settle('0.0175'); // at most max; '0' charges nothing
   *   res.set(settled.headers).json({ charged: settled.amount });
   * });
   */
  readonly upto?: UptoTokenOption;
  /**
   * Browsers (`Accept: text/html` from a `Mozilla` user agent, as the stock x402 middleware decides) that
   * present no payment get a self-contained 402 page that explains the price and pays an `exact` option
   * with an injected wallet; `false` answers them the JSON 402 like any client.
   */
  readonly paywallPage?: PaywallPageOptions | false;
  /** Lifecycle hooks around verify and settle (log, veto, enrich), named as x402's resource server names them. */
  readonly hooks?: PaywallHooks;
  /**
   * x402 extensions the 402 declares (`extensions` of its PaymentRequired), which x402 v2 buyers echo in
   * their payment. With the stock `declareDiscoveryExtension` (`@x402/extensions/bazaar`) the gateway's
   * facilitator catalogues the resource in GET /facilitator/discovery/resources once an `exact` payment
   * for it settles; an HTTP declaration's method, which a stock seller's resource server fills in from
   * the route, is GET here (POST with a `bodyType`) unless the declaration states one.
   *
   * @example
   * protect({ price: '0.01', payTo, exact: { asset: usdcMint, amount: '0.01' },
   *   extensions: declareDiscoveryExtension({ input: { city: 'Lisbon' } }) })
   */
  readonly extensions?: Readonly<Record<string, unknown>>;
}

interface PaymentBase {
  /**
   * The gateway's record of this payment in the seller's account: GET /payment/status/{paymentId}, and
   * what its later events name. A payment can still leave the chain after the request was served (a
   * reorg): tie what you grant to this id and take it back on `payment.reverted` (verifyPaymentWebhook).
   * Absent only when the gateway's answer did not name one (a gateway before 0.1).
   */
  readonly paymentId?: string;
  readonly network: string;
  /** Who paid. */
  readonly payer: string;
  /** The transaction signature (Solana) or hash (EVM). */
  readonly transaction: string;
  /** Exact decimal in whole units of `asset`: `'0.01'`. */
  readonly amount: string;
  /** What the resource's hooks left for the handler (`hooks`, PaywallHookContext.metadata). */
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/** A native payment, redeemed with POST /payment/receive. */
export interface NativePayment extends PaymentBase {
  readonly scheme: typeof GATE402_NATIVE_SCHEME;
  readonly asset: typeof NATIVE_ASSET;
  /** The gateway's record of the receipt (POST /payment/receive's answer). */
  readonly receipt: ResponseOf<'receivePayment'>;
}

/** An `exact` token payment, settled by the gateway's facilitator. */
export interface ExactPayment extends PaymentBase {
  readonly scheme: typeof EXACT_SCHEME;
  /** The mint or contract. */
  readonly asset: string;
  /** The facilitator's settle answer. */
  readonly settlement: ResponseOf<'facilitatorSettle'>;
}

/** A payment the paywall accepted, attached to the request it let through. */
export type Gate402Payment = NativePayment | ExactPayment | UptoPayment;

/** What a framework adapter needs from the request. */
export interface PaywallRequest {
  /** The absolute URL the request was made to. */
  readonly url: string;
  header(name: string): string | undefined;
}

/** What the adapter does: let the request through with headers set, or answer for it. */
export type PaywallDecision =
  | { readonly paid: true; readonly payment: Gate402Payment; readonly headers: Record<string, string> }
  | {
      readonly paid: false;
      readonly status: number;
      readonly headers: Record<string, string>;
      /** JSON to send; a string (the browser paywall page) is sent as is under its Content-Type header. */
      readonly body: unknown;
    };

/**
 * The framework-neutral core of the seller middleware: the 402 challenge, and the check of a presented
 * payment with the gateway. The Express, Fastify and Hono adapters only translate requests and answers.
 */
export class Gate402Paywall {
  readonly #networks: NetworkCatalog;

  constructor(readonly gateway: Gate402Client) {
    this.#networks = new NetworkCatalog(gateway);
  }

  /**
   * A protected resource. The price and address are checked now, so a mistake shows at start-up,
   * not at the first request.
   */
  protect(options: ProtectOptions): ProtectedResource {
    return new ProtectedResource(this.gateway, this.#networks, options);
  }
}

export class ProtectedResource {
  /** The price as an exact decimal string. */
  readonly #price: string;
  /** The `exact` requirement, completed from the gateway once; a failed lookup is asked again. */
  #exact: Promise<PaymentRequirements> | undefined;
  /** The `upto` requirement, likewise. */
  #upto: Promise<PaymentRequirements> | undefined;
  /**
   * The Idempotency-Key of each receive that got no answer, by proof and resource. The gateway may have
   * taken the proof then: asked again with the same key, it answers that receipt rather than "already
   * used", so the buyer who presents its proof again is served instead of having paid for nothing. Used
   * once and forgotten, so a replay after that is refused as before.
   */
  readonly #unanswered = new Map<string, string>();
  /**
   * `exact` payments whose settle got no answer, or `settlement_pending`: presented again, they are settled
   * again without verifying first (a verify refuses any stored settlement, `settlement_pending` or
   * `duplicate_settlement`, and the buyer who paid would never be served), and `duplicate_settlement` is
   * then this paywall's own settlement. Used once and forgotten, so a replay after that is refused as before.
   */
  readonly #unsettled = new Map<string, true>();
  /**
   * `upto` escrow deposits whose settle got no answer, or `settlement_pending`, likewise (settled again,
   * not verified again, when presented again), with when the first deposit was asked (Unix ms): the
   * claim's deadline counts from it.
   */
  readonly #unsettledDeposits = new Map<string, number>();
  readonly #browser: BrowserPaywall;

  constructor(
    private readonly gateway: Gate402Client,
    private readonly networks: NetworkCatalog,
    private readonly options: ProtectOptions,
  ) {
    this.#browser = new BrowserPaywall(gateway, options.paywallPage);
    const price = typeof options.price === 'number' ? String(options.price) : options.price.trim();
    // 18 decimals (wei) hold every native currency; the network's own decimals are checked per request.
    const atomic = toAtomicUnits(price, 18);
    if (atomic < toAtomicUnits(MIN_PRICE, 18) || atomic > toAtomicUnits(MAX_PRICE, 18)) {
      throw new RangeError(`price must be from ${MIN_PRICE} to ${MAX_PRICE} (native currency), got ${price}`);
    }
    this.#price = fromAtomicUnits(atomic, 18);
    toJsonNumber(this.#price);
    if (options.payTo.trim() === '') throw new RangeError('payTo must name the wallet to be paid');
    if (options.exact !== undefined && toAtomicUnits(options.exact.amount, 18) === 0n) {
      throw new RangeError('exact.amount must be more than 0');
    }
  }

  /** Answers the request: a 402 challenge, a refusal, or the payment and the headers to set. */
  async handle(request: PaywallRequest): Promise<PaywallDecision> {
    let network: NetworkInfo | undefined;
    let exact: PaymentRequirements | undefined;
    let upto: PaymentRequirements | undefined;
    try {
      network = await this.networks.resolve(this.options.payTo, this.options.network);
      if (network !== undefined) exact = await this.#exactRequirement(network.id);
      if (network !== undefined) upto = await this.#uptoRequirement(network.id);
    } catch (error) {
      // The gateway answered nothing or refused (502, as for a payment it cannot check); anything else is
      // the seller's `exact` option the gateway's answers rule out (more decimals than the token has, a
      // network its facilitator does not settle): the seller's to fix, not the gateway's.
      if (error instanceof Gate402Error || error instanceof Gate402TransportError)
        return gatewayFailure(error);
      return failure(500, { error: `the paywall's exact option: ${(error as Error).message}` });
    }
    if (network === undefined) {
      return failure(500, {
        error: `the gateway serves no network ${this.options.network ?? `for the address ${this.options.payTo}`}`,
      });
    }
    let v2: PaymentRequired;
    try {
      v2 = this.#offer(network, request.url, exact, upto);
    } catch (error) {
      return failure(500, { error: `price ${this.#price}: ${(error as Error).message} for ${network.id}` });
    }
    // v1 clients are offered what they can pay: `exact` under v1 network names (GET /networks names them).
    let known: readonly NetworkInfo[];
    try {
      known = await this.networks.all();
    } catch (error) {
      return gatewayFailure(error);
    }
    const offer: Offer = {
      v2,
      v1: v1Requirements(
        v2,
        (id) => known.find((n) => n.id === id || n.x402Aliases.includes(id))?.x402V1Network ?? undefined,
      ),
    };
    const presented = readPresentedPayment((name) => request.header(name));
    if (presented === undefined) {
      const unpaid = challenge(offer, 'payment required');
      const page = await this.#browser.answer(request, offer.v2, known, unpaid.headers);
      return page === undefined ? unpaid : { paid: false, ...page };
    }
    if (typeof presented === 'string') return challenge(offer, presented);

    if (upto !== undefined && presented.scheme === UPTO_SCHEME && presented.version === 2) {
      return this.#verifyUpto(offer, upto, presented, request);
    }
    if (exact !== undefined && presented.scheme === EXACT_SCHEME && presented.version === 2) {
      return this.#settleExact(offer, exact, presented, request);
    }
    if (exact !== undefined && presented.scheme === EXACT_SCHEME && presented.version === 1) {
      // x402 v1: the payment names the v1 network it paid on; the offer's v1 form says what it must meet.
      const v1 = offer.v1.find((r) => r.network === presented.network);
      if (v1 !== undefined) return this.#settleExact(offer, exact, presented, request, v1);
    }
    const requirement = offer.v2.accepts[0] as PaymentRequirements;
    // A bare proof names no network: the gateway's receipt says which, and is checked below.
    const networkNamed = presented.network !== undefined;
    if (presented.scheme !== GATE402_NATIVE_SCHEME || (networkNamed && presented.network !== network.id)) {
      return challenge(
        offer,
        `no payment option for scheme ${String(presented.scheme)} on ${String(presented.network)}`,
      );
    }
    if (presented.accepted !== undefined && !sameRequirement(requirement, presented.accepted)) {
      return challenge(offer, 'the payment accepted other requirements than the ones offered');
    }
    if (!isGate402NativePayload(presented.payload)) {
      return challenge(offer, 'the payload carries no paymentProof');
    }

    const hooks = this.#hooks(presented, requirement, request);
    try {
      await hooks.before('onBeforeVerify');
      await hooks.before('onBeforeSettle');
    } catch (error) {
      return stopped(offer, error as PaywallHookStop);
    }
    let receipt: ResponseOf<'receivePayment'>;
    const unansweredKey = JSON.stringify([presented.payload.paymentProof, offer.v2.resource.url]);
    // Taken out while this request uses it, so two requests presenting the proof never share its receipt.
    const idempotencyKey = this.#unanswered.get(unansweredKey) ?? `gate402-paywall-${randomUUID()}`;
    this.#unanswered.delete(unansweredKey);
    try {
      receipt = await this.gateway.receivePayment(
        {
          walletAddress: this.options.payTo,
          paymentProof: presented.payload.paymentProof,
          expectedAmount: toJsonNumber(this.#price),
          // The price is in the native currency: the gateway refuses a payment in anything else (an x402
          // token payload, a token the buyer minted) before it takes the proof, and reads the amount in
          // the native currency's decimals. A token is paid only through the `exact` option.
          asset: network.nativeCurrency.symbol,
          resource: offer.v2.resource.url,
          // A payment on another network of the family is refused before the gateway takes the proof.
          network: network.id,
        },
        { idempotencyKey },
      );
    } catch (error) {
      await hooks.verifyFailure(error as Error);
      if (isRefusedPayment(error)) return challenge(offer, reasonOf(error));
      if (error instanceof Gate402TransportError || isGate402Error(error, 'IDEMPOTENCY_KEY_IN_USE')) {
        remember(this.#unanswered, unansweredKey, idempotencyKey);
      }
      return gatewayFailure(error);
    }
    if (receipt.network !== network.id) {
      return challenge(offer, `the payment was made on ${receipt.network}, not ${network.id}`);
    }
    if (receipt.asset.address !== null) {
      return challenge(
        offer,
        `the payment was made in ${receipt.asset.symbol ?? receipt.asset.address}, not ${network.nativeCurrency.symbol}`,
      );
    }
    const payment: NativePayment = {
      scheme: GATE402_NATIVE_SCHEME,
      asset: NATIVE_ASSET,
      paymentId: receipt.paymentId,
      network: receipt.network,
      payer: receipt.sender,
      transaction: receipt.signature,
      amount: this.#price,
      receipt,
    };
    const settled: SettleResponse = {
      success: true,
      payer: receipt.sender,
      transaction: receipt.signature,
      network: receipt.network as SettleResponse['network'],
    };
    await hooks.afterRedeemed(settled);
    return enriched(paid(payment, presented.version, settled), hooks);
  }

  /**
   * x402's own flow: the facilitator verifies, then settles (once per payment, across retries). `v1`: the
   * payment came in X-PAYMENT from an x402 v1 client, which paid this v1 form of `requirement`; it is
   * settled as v1 and answered X-PAYMENT-RESPONSE.
   */
  async #settleExact(
    offer: Offer,
    requirement: PaymentRequirements,
    presented: PresentedPayment,
    request: PaywallRequest,
    v1?: V1Requirement,
  ): Promise<PaywallDecision> {
    if (v1 === undefined && !sameRequirement(requirement, presented.accepted)) {
      return challenge(offer, 'the payment accepted other requirements than the ones offered');
    }
    const body =
      v1 === undefined
        ? { x402Version: 2, paymentPayload: presented.decoded, paymentRequirements: requirement }
        : { x402Version: 1, paymentPayload: presented.decoded, paymentRequirements: v1 };
    const unsettledKey = JSON.stringify(presented.decoded.payload ?? null);
    // Taken out while this request settles it, so two requests presenting it are never both served.
    const resumed = this.#unsettled.delete(unsettledKey);
    let settlement: ResponseOf<'facilitatorSettle'>;
    let settling = false;
    const hooks = this.#hooks(presented, requirement, request);
    try {
      if (!resumed) {
        const verdict = await hooks.verify(() => this.gateway.facilitatorVerify(body));
        if (!verdict.isValid) {
          return challenge(
            offer,
            `${verdict.invalidReason ?? 'invalid'}: ${verdict.invalidMessage ?? ''}`.trim(),
          );
        }
      }
      // A settle resumed after a lost answer may already be on its way: too late to ask again.
      if (!resumed) await hooks.before('onBeforeSettle');
      settling = true;
      settlement = await this.gateway.facilitatorSettle(body);
    } catch (error) {
      if (error instanceof PaywallHookStop) return stopped(offer, error);
      const recovered = settling ? await hooks.settleFailure(error) : undefined;
      if (recovered !== undefined) return this.#servedExact(requirement, recovered, v1, hooks);
      // The settle may have sent the payment (or, resumed, found it sent): it is settled again next time.
      // Not after a failed verify: then this paywall never asked for a settlement, and one that exists
      // (another instance's, served there) is not its own.
      if (settling && (resumed || !isGate402Error(error) || error.status >= 500)) {
        remember(this.#unsettled, unsettledKey, true);
      }
      return gatewayFailure(error);
    }
    if (!settlement.success && resumed && settlement.errorReason === 'duplicate_settlement') {
      // The settlement this paywall asked for, whose answer it never had.
      settlement = {
        success: true,
        transaction: settlement.transaction,
        network: settlement.network,
        ...(settlement.payer === undefined ? {} : { payer: settlement.payer }),
        ...(settlement.paymentId === undefined ? {} : { paymentId: settlement.paymentId }),
      };
    }
    if (!settlement.success) {
      const recovered = await hooks.settleFailure(settlement);
      if (recovered !== undefined) return this.#servedExact(requirement, recovered, v1, hooks);
      // settlement_pending: the transaction may still land; the same payment presented again is settled
      // again, which looks at that transaction and never sends another.
      if (settlement.errorReason === 'settlement_pending') remember(this.#unsettled, unsettledKey, true);
      return challenge(
        offer,
        `${settlement.errorReason ?? 'settle_failed'}: ${settlement.errorMessage ?? ''}`.trim(),
      );
    }
    await hooks.afterSettle(settlement as SettleResponse);
    return this.#servedExact(requirement, settlement, v1, hooks);
  }

  /**
   * x402 `upto`: the facilitator verifies the signed maximum now; the handler settles what the request
   * cost (UptoPayment.settle), after serving it. Nothing is settled to the seller here; in an escrow flow
   * (Solana) the maximum moves into escrow now, as a stock seller's `before-handler` settle does, so the
   * handler serves only a buyer whose money is held.
   */
  async #verifyUpto(
    offer: Offer,
    requirement: PaymentRequirements,
    presented: PresentedPayment,
    request: PaywallRequest,
  ): Promise<PaywallDecision> {
    if (!sameRequirement(requirement, presented.accepted)) {
      return challenge(offer, 'the payment accepted other requirements than the ones offered');
    }
    const hooks = this.#hooks(presented, requirement, request);
    const escrowed = escrowsBeforeHandler(requirement);
    const decoded = presented.decoded as unknown as Record<string, unknown>;
    const unsettledKey = JSON.stringify(['upto-deposit', decoded.payload ?? null]);
    // A deposit whose answer was lost, or found pending, is settled again without verifying first (a
    // verify refuses a deposit under way or settled, and the buyer whose maximum is held would never be
    // served); `duplicate_settlement` is then this paywall's own deposit. Taken out while this request
    // uses it, so two requests presenting it are never both served.
    const firstAsked = escrowed ? this.#unsettledDeposits.get(unsettledKey) : undefined;
    const resumed = firstAsked !== undefined && this.#unsettledDeposits.delete(unsettledKey);
    const depositAsked = firstAsked ?? Date.now();
    let payment: UptoPayment;
    let depositing = false;
    try {
      let payer = '';
      if (!resumed) {
        const verdict = await hooks.verify(() =>
          this.gateway.facilitatorVerify({
            x402Version: 2,
            paymentPayload: presented.decoded,
            paymentRequirements: requirement,
          }),
        );
        if (!verdict.isValid) {
          return challenge(
            offer,
            `${verdict.invalidReason ?? 'invalid'}: ${verdict.invalidMessage ?? ''}`.trim(),
          );
        }
        payer = verdict.payer ?? '';
      }
      let deposit: { transaction: string; askedAt: number } | undefined;
      if (escrowed) {
        // The deposit is no settlement to the seller (the money is held, not paid), so the settle hooks
        // run at the claim only. A replayed payment is refused here: its deposit is settled already.
        depositing = true;
        const answer = await this.gateway.facilitatorSettle({
          x402Version: 2,
          paymentPayload: escrowPhase(decoded, 'deposit'),
          paymentRequirements: requirement,
        } as Parameters<Gate402Client['facilitatorSettle']>[0]);
        depositing = false;
        const ours = resumed && answer.errorReason === 'duplicate_settlement';
        if (!answer.success && !ours) {
          // settlement_pending: the open may still land; presented again, it is settled again, which
          // looks at that same transaction and never sends another.
          if (answer.errorReason === 'settlement_pending')
            remember(this.#unsettledDeposits, unsettledKey, depositAsked);
          return challenge(
            offer,
            `${answer.errorReason ?? 'deposit_failed'}: ${answer.errorMessage ?? ''}`.trim(),
          );
        }
        deposit = { transaction: answer.transaction, askedAt: depositAsked };
        payer ||= answer.payer ?? '';
      }
      payment = await uptoPayment(
        this.gateway,
        requirement,
        decoded,
        payer,
        (settlement) => paid(payment, 2, settlement).headers,
        hooks,
        deposit,
      );
    } catch (error) {
      if (error instanceof PaywallHookStop) return stopped(offer, error);
      // The deposit may have been sent (or, resumed, found sent): it is settled again next time. Not
      // after a refusal by the gateway (4xx): then nothing was sent for this paywall.
      if (depositing && (resumed || !isGate402Error(error) || error.status >= 500)) {
        remember(this.#unsettledDeposits, unsettledKey, depositAsked);
      }
      return gatewayFailure(error);
    }
    return enriched(
      { paid: true, payment, headers: { 'Access-Control-Expose-Headers': EXPOSED_HEADERS } },
      hooks,
    );
  }

  /** The paid answer to an `exact` payment the facilitator settled (or a failure hook recovered). */
  async #servedExact(
    requirement: PaymentRequirements,
    settlement: ResponseOf<'facilitatorSettle'>,
    v1: V1Requirement | undefined,
    hooks: PaywallHookRun,
  ): Promise<PaywallDecision> {
    const token = await this.gateway.tokenInfo(requirement.asset).catch(() => undefined);
    const payment: ExactPayment = {
      scheme: EXACT_SCHEME,
      asset: requirement.asset,
      ...(settlement.paymentId === undefined ? {} : { paymentId: settlement.paymentId }),
      // The CAIP-2 id, also for a v1 payment (whose settlement names the v1 network).
      network: requirement.network,
      payer: settlement.payer ?? '',
      transaction: settlement.transaction,
      amount:
        token === undefined
          ? requirement.amount
          : fromAtomicUnits(BigInt(requirement.amount), token.decimals),
      settlement,
    };
    // The buyer is told the settlement, not the seller's own record of it.
    const { paymentId: _own, ...response } = settlement;
    return enriched(paid(payment, v1 === undefined ? 2 : 1, response as SettleResponse), hooks);
  }

  #hooks(presented: PresentedPayment, requirements: PaymentRequirements, request: PaywallRequest) {
    return new PaywallHookRun(this.options.hooks, {
      x402Version: presented.version,
      paymentPayload: presented.decoded,
      requirements,
      transportContext: { request },
    });
  }

  #uptoRequirement(nativeNetwork: string): Promise<PaymentRequirements> | undefined {
    const option = this.options.upto;
    if (option === undefined) return undefined;
    this.#upto ??= uptoRequirement(this.gateway, option, {
      network: nativeNetwork,
      payTo: this.options.payTo,
      maxTimeoutSeconds: this.options.maxTimeoutSeconds ?? 60,
    })
      .then(async (requirement) => {
        // A Solana claim pays payTo's token account: without it every deposit is refused.
        await this.#payeeCanReceive(requirement);
        return requirement;
      })
      .catch((error: unknown) => {
        this.#upto = undefined;
        throw error;
      });
    return this.#upto;
  }

  #exactRequirement(nativeNetwork: string): Promise<PaymentRequirements> | undefined {
    const option = this.options.exact;
    if (option === undefined) return undefined;
    this.#exact ??= exactRequirement(this.gateway, option, {
      network: nativeNetwork,
      payTo: this.options.payTo,
      maxTimeoutSeconds: this.options.maxTimeoutSeconds ?? 60,
    })
      .then(async (requirement) => {
        await this.#payeeCanReceive(requirement);
        return requirement;
      })
      .catch((error: unknown) => {
        this.#exact = undefined;
        throw error;
      });
    return this.#exact;
  }

  /**
   * On Solana an `exact` payment (and an `upto` claim) goes into the payee's associated token account for
   * the asset, which the buyer's transaction does not open: without it every payment would fail. Before it is offered, the
   * gateway opens it for the seller's custodial wallet (the wallet pays the rent-exempt deposit from its
   * SOL), or says it is missing for a watch-only one, which is the seller's to fix. A payee that is not
   * one of the seller's wallets cannot be looked at: the facilitator's refusal names it then.
   */
  async #payeeCanReceive(requirement: PaymentRequirements): Promise<void> {
    if (!requirement.network.startsWith('solana:')) return;
    const known = await this.networks.all();
    const network = known.find(
      (n) => n.id === requirement.network || n.x402Aliases.includes(requirement.network),
    );
    let state: ResponseOf<'openTokenAccount'>;
    try {
      state = await this.gateway.openTokenAccount(requirement.payTo, {
        asset: requirement.asset,
        ...(network === undefined ? {} : { network: network.id }),
      });
    } catch (error) {
      if (isGate402Error(error, 'FORBIDDEN')) return;
      if (isGate402Error(error, 'INSUFFICIENT_BALANCE')) {
        throw new Error(
          `payTo ${requirement.payTo} has no token account for ${requirement.asset}, and too little SOL to open one (about 0.002 SOL of rent-exempt deposit and the fee): fund it with SOL`,
        );
      }
      throw error;
    }
    if (!state.exists) {
      throw new Error(
        `payTo ${requirement.payTo} (watch-only) has no token account for ${requirement.asset} (${state.account}): x402 buyers cannot pay it until it is created`,
      );
    }
  }

  #offer(
    network: NetworkInfo,
    requestUrl: string,
    exact: PaymentRequirements | undefined,
    upto?: PaymentRequirements,
  ): PaymentRequired {
    const requirement: PaymentRequirements = {
      scheme: GATE402_NATIVE_SCHEME,
      network: network.id as PaymentRequirements['network'],
      asset: NATIVE_ASSET,
      amount: toAtomicUnits(this.#price, network.nativeCurrency.decimals).toString(),
      payTo: this.options.payTo,
      maxTimeoutSeconds: this.options.maxTimeoutSeconds ?? 60,
      extra: { currency: network.nativeCurrency.symbol, decimals: network.nativeCurrency.decimals },
    };
    return {
      x402Version: 2,
      resource: {
        url: this.options.resource ?? requestUrl,
        ...(this.options.description === undefined ? {} : { description: this.options.description }),
        ...(this.options.mimeType === undefined ? {} : { mimeType: this.options.mimeType }),
      },
      accepts: [requirement, ...(exact === undefined ? [] : [exact]), ...(upto === undefined ? [] : [upto])],
      ...(this.options.extensions === undefined
        ? {}
        : { extensions: declaredExtensions(this.options.extensions) }),
    };
  }
}

/** A paid answer with what the hooks added: their metadata on the payment, their headers under the paywall's. */
function enriched(decision: PaywallDecision, hooks: PaywallHookRun): PaywallDecision {
  if (!decision.paid) return decision;
  const metadata = hooks.metadata;
  return {
    ...decision,
    payment: Object.keys(metadata).length === 0 ? decision.payment : { ...decision.payment, metadata },
    headers: { ...hooks.headers, ...decision.headers },
  };
}

/** A hook vetoed the payment (402 naming its reason) or failed (500): nothing was settled. */
function stopped(offer: Offer, stop: PaywallHookStop): PaywallDecision {
  return stop.kind === 'veto' ? challenge(offer, stop.message) : failure(500, { error: stop.message });
}

/** Adds to a bounded memory of unfinished payments, forgetting the oldest beyond MAX_UNFINISHED. */
function remember<V>(memory: Map<string, V>, key: string, value: V): void {
  memory.set(key, value);
  if (memory.size > MAX_UNFINISHED) memory.delete(memory.keys().next().value as string);
}

function paid(payment: Gate402Payment, version: 1 | 2, settlement: SettleResponse): PaywallDecision {
  return {
    paid: true,
    payment,
    headers: {
      [version === 2 ? PAYMENT_RESPONSE_HEADER : X_PAYMENT_RESPONSE_HEADER]:
        encodePaymentResponseHeader(settlement),
      'Access-Control-Expose-Headers': EXPOSED_HEADERS,
    },
  };
}

/** The buyer's payment was refused: a 402 naming the reason, so a new payment can be made. */
function isRefusedPayment(error: unknown): error is Gate402Error {
  if (isGate402Error(error, 'INVALID_PAYMENT_PROOF', 'PAYMENT_VERIFICATION_FAILED', 'PAYMENT_FAILED'))
    return true;
  // A proof too long or empty is a bad proof, not a bad seller.
  return (
    isGate402Error(error, 'INVALID_PARAMETERS') && Object.keys(error.details ?? {}).join() === 'paymentProof'
  );
}

function reasonOf(error: Gate402Error): string {
  const detail = error.details?.paymentProof;
  return `${error.code}: ${error.message}${detail === undefined || error.message.includes(detail) ? '' : ` (${detail})`}`;
}

/** The gateway could not check the payment (unreachable, rate-limited, misconfigured key): not the buyer's fault. */
function gatewayFailure(error: unknown): PaywallDecision {
  const retryAfter = error instanceof Gate402Error ? error.retryAfter : undefined;
  const reason = error instanceof Gate402Error ? `${error.code}: ${error.message}` : (error as Error).message;
  return failure(502, { error: `the payment gateway could not check the payment: ${reason}` }, retryAfter);
}

function failure(status: number, body: unknown, retryAfter?: number): PaywallDecision {
  return {
    paid: false,
    status,
    headers: retryAfter === undefined ? {} : { 'Retry-After': String(retryAfter) },
    body,
  };
}

/** What a resource offers: every option in x402 v2, and those x402 v1 clients can pay in v1's form. */
interface Offer {
  readonly v2: PaymentRequired;
  readonly v1: readonly V1Requirement[];
}

function challenge(offer: Offer, error: string): PaywallDecision {
  return { paid: false, ...paymentRequiredAnswer(offer.v2, error, offer.v1) };
}
