import { canonicalAddress } from '../../chains/canonical-address.ts';
import type { ChainAdapter, ConfirmationOutcome } from '../../chains/chain-adapter.ts';
import { ChainError } from '../../chains/chain-error.ts';
import type {
  ExactRefusal,
  ExactRequirements,
  ExactScheme,
  LandedPayment,
  PreparedSettlementTx,
} from '../../chains/exact-scheme.ts';
import type { NetworkRegistry } from '../../chains/network-registry.ts';
import type { EscrowRent, SchemeName, UptoScheme } from '../../chains/upto-scheme.ts';
import { GatewayError } from '../../domain/gateway-error.ts';
import { newId } from '../../domain/ids.ts';
import { atomicToDecimalText } from '../../domain/money.ts';
import type { NetworkInfo } from '../../domain/network.ts';
import type {
  SettlementClaimant,
  SettlementRecord,
  SettlementStatus,
} from '../../domain/records/settlement-records.ts';
import { feeDayOf, secondsUntilNextFeeDay } from '../../domain/sponsored-fees.ts';
import { reasonForVersion, type X402Reason } from '../../domain/x402-reasons.ts';
import type { Repositories, Store } from '../../store/store.ts';
import { caip2Of } from '../../x402/network-names.ts';
import { parsePaymentRequest, type X402Payment } from '../../x402/payment-request.ts';
import type { SecretBox } from '../custody/secret-box.ts';
import { newPayment } from '../payments/new-payment.ts';
import type { PaymentLedger } from '../payments/payment-ledger.ts';
import { x402ReceiptProofKey } from '../payments/x402/x402-receipt-proof.ts';
import { releaseFundingPlace, SponsoringRefused, takeFundingPlace } from './approval-funding-limits.ts';
import type { SettleAnswer, SupportedAnswer, VerifyAnswer } from './facilitator-answers.ts';
import { FacilitatorRoutes, type Route } from './facilitator-routes.ts';
import { FeeBudget } from './fee-budget.ts';
import {
  ApprovalInUse,
  type ApprovalStepState,
  approvalStepCost,
  runApprovalStep,
  sendVoid,
} from './sponsored-approval-step.ts';
import {
  ChannelRentExceeded,
  OpenChannelsExceeded,
  releaseChannelRent,
  releaseOpenChannel,
  takeChannelRent,
  takeOpenChannel,
} from './upto-open-channels.ts';

export interface FacilitatorDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly ledger: PaymentLedger;
  readonly secrets: SecretBox;
  /** How long a settle waits for confirmation before answering `settlement_pending`. */
  readonly settleWaitMs: number;
  /** Serve the embedded Solana localnet under devnet's CAIP-2 id too (stock @x402/svm clients know no other). */
  readonly localnetAsDevnet: boolean;
  /** The fee payer's daily budget per account and network, and the smallest payment settled; defaults if absent. */
  readonly feeBudget?: FeeBudget;
  /** Told the network fee each settlement finally cost its account (the /metrics sponsored fees). */
  readonly sponsoredFees?: SponsoredFeeObserver;
  readonly now?: () => number;
  readonly log?: (message: string) => void;
}

/** Counts what the fee payer spends for whom (GatewayMetrics). */
export interface SponsoredFeeObserver {
  /** `fee`: atomic units of `network`'s native currency, charged to `accountId` for one settlement. */
  feeSponsored(accountId: string, network: NetworkInfo, fee: bigint): void;
}

/**
 * Who asks to settle: the account whose API key called POST /facilitator/settle or POST
 * /payment/receive, and for the latter its Idempotency-Key. The settlement's payment is recorded for
 * this account and nobody else; its network fee is charged to this account's budget.
 */
export interface SettleAsker {
  readonly accountId: string;
  readonly idempotencyKey?: string | undefined;
}

/** The program addresses of Solana's token programs, by the name ChainTokenInfo gives them. */
const SOLANA_TOKEN_PROGRAMS: Readonly<Record<string, string>> = {
  'spl-token': 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
  'spl-token-2022': 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
};

/**
 * Why a settlement whose buyer approval did not take effect is failed (erc20ApprovalGasSponsoring; see
 * FacilitatorService.voidSettlement): its transaction was never sent.
 */
const VOIDED =
  "the buyer's approval of Permit2 did not take effect (another transaction of the buyer's took its nonce, or the allowance was taken back): the settlement was not sent, and this payer's approval gas is not funded again";

/** Why a settlement whose transaction was never mined is failed (EVM). */
const NEVER_CARRIED =
  'the transaction was never mined, and the authorization expired unused (a block at its validBefore, or past the permit deadline, exists): it can never land now';

/**
 * The built-in x402 facilitator: `exact` on every configured network. Settlement is exactly once across
 * restarts and instances: a settlement row keyed by the payload's identity is claimed, with the signed
 * transaction in it, before the first broadcast. A second settle of a settled payload is
 * `duplicate_settlement`; a settle that outlives its wait is `settlement_pending` with the transaction,
 * and a retry looks at (and resends) that same transaction instead of making another.
 *
 * A settled payment is recorded, with its outbox event, for the account that asked to settle it — the
 * seller whose key called settle — and for no other: not for whoever holds the payTo address as a
 * wallet (anyone could register a seller's external address and would see its payments), and not for a
 * second account settling the same payload (it is answered `duplicate_settlement`). Whoever asks sees
 * only what it presented: the payload and its requirements.
 *
 * The fee payer pays every settlement's network fee, so each account has a daily budget per network:
 * the transaction's worst-case fee is reserved in the database transaction that claims it (nothing is
 * signed or broadcast past the budget: FEE_BUDGET_EXCEEDED), and corrected to the fee actually paid
 * once it lands, or given back when it can never land. Payments below a configured minimum per asset
 * are refused before anything is signed (`amount_below_minimum`).
 */
export class FacilitatorService {
  private readonly routes: FacilitatorRoutes;
  private readonly now: () => number;
  private readonly budget: FeeBudget;

  constructor(private readonly deps: FacilitatorDeps) {
    this.now = deps.now ?? Date.now;
    this.budget = deps.feeBudget ?? new FeeBudget();
    this.routes = new FacilitatorRoutes({ ...deps, now: this.now });
  }

  /** Loads (or creates) the fee-payer keys and sets up a scheme per network; funds them on local chains. */
  start(): Promise<void> {
    return this.routes.start();
  }

  supported(): SupportedAnswer {
    return this.routes.supported();
  }

  /** The x402 v1 name a configured network is settled under (GET /networks `x402V1Network`); see FacilitatorRoutes. */
  v1NetworkName(network: string): string | undefined {
    return this.routes.v1NetworkName(network);
  }

  /** The public ids a configured network also answers to (GET /networks `x402Aliases`); see FacilitatorRoutes. */
  aliasesOf(network: string): string[] {
    return this.routes.aliasesOf(network);
  }

  /** The configured network (the devnet alias resolved) a payment is for; undefined when not served here. */
  chainOf(network: string | undefined): ChainAdapter | undefined {
    return this.routes.chainOf(network);
  }

  /** The `exact` scheme serving a network (CAIP-2, the devnet alias included); undefined when none. */
  schemeFor(network: string): ExactScheme | undefined {
    return this.routes.get(network)?.scheme;
  }

  /** The `upto` scheme serving a network (CAIP-2); undefined when none (the escrow sweep asks). */
  uptoSchemeFor(network: string): UptoScheme | undefined {
    const route = this.routes.get(network, 'upto');
    return route?.name === 'upto' ? route.scheme : undefined;
  }

  /** This facilitator's Solana fee payer, which sellers name in `extra.feePayer`. */
  feePayerOf(network: string | undefined): string | undefined {
    return this.routes.feePayerOf(network);
  }

  /** POST /facilitator/verify: a v1 payload is answered under x402 1.x's reason names (reasonForVersion). */
  async verify(paymentPayload: unknown, paymentRequirements: unknown): Promise<VerifyAnswer> {
    const answer = await this.verifyResolved(this.resolve(paymentPayload, paymentRequirements));
    return answer.invalidReason === undefined
      ? answer
      : { ...answer, invalidReason: reasonForVersion(answer.invalidReason, versionOf(paymentPayload)) };
  }

  /** As `verify`, for a payment already read (e.g. from an X-PAYMENT header given to /payment/receive). */
  async verifyPayment(payment: X402Payment): Promise<VerifyAnswer> {
    return this.verifyResolved(this.route(payment));
  }

  private async verifyResolved(resolved: Resolved): Promise<VerifyAnswer> {
    if (!resolved.ok)
      return { isValid: false, invalidReason: resolved.reason, invalidMessage: resolved.message };
    const { route, payment, requirements } = resolved;
    // upto: the requirements offer a maximum, which the payload must sign; a maximum of nothing is no offer.
    if (route.name === 'upto' && requirements.amount === 0n) {
      return {
        isValid: false,
        invalidReason: 'invalid_payment_requirements',
        invalidMessage: 'paymentRequirements offers a maximum of 0 atomic units: amount must be at least 1',
      };
    }
    // What the payload pays, before whether it was settled (see settleResolved).
    const terms = await route.scheme.checkTerms(payment.payload, requirements);
    if (terms !== undefined) return invalid(terms);
    // An undecodable payload has no key; the scheme's own checks below name why.
    const key = route.scheme.settlementKey(payment.payload);
    const settled = key === undefined ? undefined : await this.deps.store.settlements.get(key);
    // Only for the terms it settles, as in settleResolved: for others the payload pays someone else.
    if (settled !== undefined && settles(route, settled, requirements)) {
      // Still on its way (claimed or broadcast, not yet confirmed): not settled, but not free to settle
      // anew either; a settle call looks at that same transaction (see settleResolved).
      const underWay = settled.status === 'claimed' || settled.status === 'submitted';
      return {
        isValid: false,
        invalidReason: underWay ? 'settlement_pending' : 'duplicate_settlement',
        invalidMessage: underWay
          ? `a settlement of this payment is under way (${settled.transactionId}): settle it again to learn how it ends`
          : `this payment was already settled by ${settled.transactionId}`,
        payer: settled.payer,
      };
    }
    const small = await this.belowMinimum(route, requirements);
    if (small !== undefined) return invalid(small);
    const verdict = await route.scheme.verify(payment.payload, requirements);
    return verdict.valid ? { isValid: true, payer: verdict.payer } : invalid(verdict);
  }

  /**
   * A payment smaller than the configured minimum for its asset: the fee payer would pay more for the
   * network fee than moves. Refused before anything is signed.
   */
  private async belowMinimum(
    route: Route,
    requirements: ExactRequirements,
  ): Promise<ExactRefusal | undefined> {
    const info = route.chain.info;
    const minimum = await this.budget.minimum(info, requirements.asset, () =>
      this.decimalsOf(route, requirements.asset),
    );
    if (minimum === undefined || requirements.amount >= minimum.atomic) return undefined;
    return {
      valid: false,
      reason: 'amount_below_minimum',
      message: `this facilitator settles at least ${minimum.text} ${minimum.name} (${minimum.atomic} atomic units) on ${info.name}: its fee payer pays the network fee, which a smaller payment does not cover; the requirements ask for ${requirements.amount}`,
    };
  }

  /**
   * Settles for `accountId`, the account whose key asked (POST /facilitator/settle): the payment is
   * recorded for it alone, and the fee is charged to its budget; the answer names that payment
   * (`paymentId`) so a seller can tie what it grants to the payment's later events (payment.reverted). Throws FEE_BUDGET_EXCEEDED when the
   * budget has no room: nothing was claimed or broadcast.
   */
  async settle(
    paymentPayload: unknown,
    paymentRequirements: unknown,
    accountId: string,
  ): Promise<SettleAnswer & { paymentId?: string }> {
    const resolved = this.resolve(paymentPayload, paymentRequirements);
    const answer = resolved.ok
      ? await this.settlePayment(resolved.payment, { accountId })
      : await this.settleResolved(resolved, stringField(paymentRequirements, 'network'), { accountId });
    // A v1 payload is answered under x402 1.x's reason names (reasonForVersion).
    return answer.errorReason === undefined
      ? answer
      : { ...answer, errorReason: reasonForVersion(answer.errorReason, versionOf(paymentPayload)) };
  }

  /**
   * As `settle`, for a payment already read; a success or a `duplicate_settlement` names the settlement's
   * recorded payment when it is the asking account's. `asker`: the POST /payment/receive asking, with
   * its Idempotency-Key — the payment this settle records carries the key (see markSettled), so that
   * request retried finds it.
   */
  async settlePayment(
    payment: X402Payment,
    asker: SettleAsker,
  ): Promise<SettleAnswer & { paymentId?: string }> {
    const answer = await this.settleResolved(this.route(payment), payment.networkAsSent, asker);
    if (!answer.success && answer.errorReason !== 'duplicate_settlement') return answer;
    const key = this.keyOf(payment);
    const settlement = key === undefined ? undefined : await this.deps.store.settlements.get(key);
    if (settlement?.paymentId == null) return answer;
    // Another account's payment (it settled the payload, or its local receipt recorded it) is not named.
    const recorded = await this.deps.store.payments.get(settlement.paymentId);
    return recorded?.accountId === asker.accountId ? { ...answer, paymentId: recorded.id } : answer;
  }

  /**
   * What identifies a payment before it settles (its settlement key), which /v1/payments/verify
   * answers as `transaction_id`.
   */
  identityOf(payment: X402Payment): string | undefined {
    return this.keyOf(payment);
  }

  private keyOf(payment: X402Payment): string | undefined {
    const route =
      payment.network === undefined ? undefined : this.routes.get(payment.network, payment.scheme);
    return route?.scheme.settlementKey(payment.payload);
  }

  private async settleResolved(
    resolved: Resolved,
    networkAsSent: string,
    asker: SettleAsker,
  ): Promise<SettleAnswer> {
    // A payment this settle records is this request's answer: it carries this request's key (if any),
    // not that of the request that claimed the settlement.
    const holder: SettlementClaimant | null =
      asker.idempotencyKey === undefined
        ? null
        : { accountId: asker.accountId, idempotencyKey: asker.idempotencyKey };
    const fail = (
      reason: X402Reason,
      message: string,
      extra: { payer?: string; transaction?: string } = {},
    ) => ({
      success: false,
      errorReason: reason,
      errorMessage: message,
      ...(extra.payer === undefined ? {} : { payer: extra.payer }),
      transaction: extra.transaction ?? '',
      network: networkAsSent,
    });
    if (!resolved.ok) return fail(resolved.reason, resolved.message);
    const { route, payment, requirements } = resolved;
    // upto: `requirements.amount` is the actual amount to settle; the payload's terms are checked
    // against the maximum it signed (the seller's 402 offered it), and the actual amount must not exceed it.
    const signed = route.name === 'upto' ? route.scheme.signedMaximum(payment.payload) : undefined;
    const signedTerms = signed === undefined ? requirements : { ...requirements, amount: signed.amount };
    // Escrow upto (Solana): the seller names the phase, and each phase is verified against its own amount
    // (a deposit: the signed maximum; a claim: the actual amount); see UptoEscrow.
    const escrow = route.name === 'upto' ? route.scheme.escrow : undefined;
    const phase = escrow?.phaseOf(payment.payload);
    if (escrow !== undefined && phase === undefined && signed !== undefined)
      return fail(
        'invalid_payload',
        'payload.type must say whether this settle is the deposit or the claim',
        {
          payer: signed.payer,
        },
      );
    const verifyTerms = phase === undefined ? signedTerms : requirements;
    // What the payload pays (token, recipient, amount), from the payload alone, comes before what
    // became of it: a payload that does not pay these requirements is refused for that, settled or not,
    // never answered `duplicate_settlement` (or a settlement's transaction) for a payment it is not.
    const terms = await route.scheme.checkTerms(payment.payload, signedTerms);
    if (terms !== undefined)
      return fail(terms.reason, terms.message, terms.payer === undefined ? {} : { payer: terms.payer });
    if (route.name === 'upto' && signed !== undefined && requirements.amount > signed.amount) {
      return fail(
        route.scheme.exceedsMaximumReason,
        `the seller asks to settle ${requirements.amount}, more than the ${signed.amount} the payer signed`,
        { payer: signed.payer },
      );
    }
    const key = route.scheme.settlementKey(payment.payload);
    if (key === undefined) {
      const verdict = await route.scheme.verify(payment.payload, requirements);
      return verdict.valid
        ? fail('invalid_payload', 'the payload cannot be decoded')
        : fail(verdict.reason, verdict.message);
    }

    // A settlement of this payload is looked at again only for the terms it settles. The payload pays
    // these requirements (checked above), yet its key may name a settlement of others: on EVM the key is
    // the signer and nonce, which a payload naming another recipient or amount can repeat (its signature
    // cannot verify). Verification refuses it as for a payload nobody settled, so one seller's
    // settlement never answers success, or its seller's payment, to another.
    const existing = await this.deps.store.settlements.get(key);
    if (existing !== undefined && settles(route, existing, requirements))
      return this.answer(await this.resume(route, existing, holder, asker), networkAsSent, asker, route);

    // A claim spends the escrow of a deposit this account settled here: no other account's key can.
    if (phase === 'claim') {
      const depositKey = escrow?.depositKey(payment.payload);
      const deposit =
        depositKey === undefined ? undefined : await this.deps.store.settlements.get(depositKey);
      if (deposit?.status !== 'settled' || recorderOf(deposit) !== asker.accountId)
        return fail(
          'upto_deposit_not_settled',
          'the deposit of this payload was not settled here for your account',
          {
            ...(signed === undefined ? {} : { payer: signed.payer }),
          },
        );
      const late = escrow?.claimRefusal(payment.payload, deposit, this.now());
      if (late !== undefined)
        return fail(late.reason, late.message, signed === undefined ? {} : { payer: signed.payer });
    }
    // upto: nothing to move. x402's upto scheme settles 0 without the chain; the payload is consumed all
    // the same (settled at most once), recorded as a settlement of 0 with no transaction. An escrow's claim
    // of 0 goes on chain: it gives the buyer the deposit back.
    if (route.name === 'upto' && requirements.amount === 0n && escrow === undefined)
      return this.settleNothing(route, key, payment, requirements, signedTerms, asker, networkAsSent);
    // The minimum binds an escrow's deposit (its maximum); its claim must release the escrow whatever it settles.
    const small = phase === 'claim' ? undefined : await this.belowMinimum(route, requirements);
    if (small !== undefined) return fail(small.reason, small.message);
    const verdict = await route.scheme.verify(payment.payload, verifyTerms);
    if (!verdict.valid)
      return fail(
        verdict.reason,
        verdict.message,
        verdict.payer === undefined ? {} : { payer: verdict.payer },
      );
    const decimals = verdict.decimals;
    let claimed: { record: SettlementRecord; nonce: PreparedSettlementTx['nonce'] } | undefined;
    try {
      claimed = await this.claim(route, key, payment, requirements, asker, holder);
    } catch (error) {
      // Over the fee budget: nothing claimed, nothing broadcast (the route answers it; see overBudget).
      if (error instanceof GatewayError && error.code === 'FEE_BUDGET_EXCEEDED') throw error;
      if (error instanceof ApprovalInUse)
        return fail('erc20_approval_in_use', error.message, { payer: error.payer });
      if (error instanceof SponsoringRefused)
        return fail('erc20_approval_sponsoring_refused', error.message, { payer: error.payer });
      if (error instanceof OpenChannelsExceeded || error instanceof ChannelRentExceeded)
        return fail(
          'upto_open_channels_exceeded',
          error.message,
          signed === undefined ? {} : { payer: signed.payer },
        );
      // Claiming asks the chain again (EVM: the transfer's gas estimate), after verification: a settle of
      // this payload that landed meanwhile (here or on another instance) makes it revert, as does anyone
      // else's use of the authorization. The first makes this one the duplicate; the second, a refusal.
      if ((await this.deps.store.settlements.get(key)) === undefined) {
        const now = await route.scheme.verify(payment.payload, verifyTerms);
        if (now.valid) throw error;
        return fail(now.reason, now.message, now.payer === undefined ? {} : { payer: now.payer });
      }
      claimed = undefined;
    }
    if (claimed === undefined) {
      // Another request (here or on another instance) claimed it first: this one is the duplicate.
      const winner = await this.deps.store.settlements.get(key);
      if (winner === undefined) throw new Error(`settlement ${key} neither claimed nor found`);
      return this.answer(await this.resume(route, winner, holder, asker), networkAsSent, asker, route);
    }
    // erc20ApprovalGasSponsoring: the buyer's funded approval is mined before the settlement is sent.
    const step = await this.approveFirst(route, claimed.record);
    if (step === 'pending')
      return this.answer({ kind: 'pending', settlement: claimed.record }, networkAsSent, asker, route);
    if (step === 'void')
      return this.answer(await this.voidSettlement(route, claimed.record), networkAsSent, asker, route);
    const outcome = await this.broadcastAndWait(route, claimed.record, decimals, true, holder);
    if (outcome.kind === 'failed' && outcome.neverSent && claimed.nonce !== undefined) {
      // Refused before it reached the pool: its nonce is given back if no later one was taken, so the
      // fee payer's sequence keeps no gap that would hold every later settlement.
      await this.deps.store.nonces.release(route.chain.info.id, claimed.nonce.address, claimed.nonce.value);
    }
    return this.answer(outcome, networkAsSent, asker, route);
  }

  /**
   * An `upto` settle of 0 (x402: no usage, no charge): verified as any settle, then recorded as settled
   * with no transaction, in one insert keyed as any settlement of the payload, so the payload is settled
   * at most once (a later settle of it is `duplicate_settlement`). No payment is recorded (nothing moved)
   * and no fee is charged; the answer's `transaction` is empty and its `amount` "0".
   */
  private async settleNothing(
    route: Route,
    key: string,
    payment: X402Payment,
    requirements: ExactRequirements,
    signedTerms: ExactRequirements,
    asker: SettleAsker,
    networkAsSent: string,
  ): Promise<SettleAnswer> {
    const verdict = await route.scheme.verify(payment.payload, signedTerms);
    if (!verdict.valid) {
      return {
        success: false,
        errorReason: verdict.reason,
        errorMessage: verdict.message,
        ...(verdict.payer === undefined ? {} : { payer: verdict.payer }),
        transaction: '',
        network: networkAsSent,
      };
    }
    const at = this.now();
    const record: SettlementRecord = {
      key,
      network: route.chain.info.id,
      payer: verdict.payer,
      payTo: canonicalAddress(requirements.payTo),
      asset: requirements.asset,
      amount: 0n,
      transactionId: '',
      signedTransaction: '',
      lastValidBlockHeight: null,
      status: 'settled',
      error: null,
      paymentId: null,
      createdAt: at,
      updatedAt: at,
      claimedBy: null,
      resource: payment.resource ?? null,
      accountId: asker.accountId,
      sponsoredFee: null,
    };
    if (!(await this.deps.store.settlements.claim(record))) {
      const winner = await this.deps.store.settlements.get(key);
      if (winner === undefined) throw new Error(`settlement ${key} neither claimed nor found`);
      return this.answer(await this.resume(route, winner, null, asker), networkAsSent, asker, route);
    }
    return this.answer({ kind: 'settled', settlement: record }, networkAsSent, asker, route);
  }

  /**
   * faremeter's POST <facilitator>/accepts: the seller's requirements, completed with what buyers need
   * from this facilitator — on Solana its fee payer (`extra.feePayer`, which no seller may name
   * otherwise), the mint's decimals and token program — and without those it does not settle (another
   * scheme or network, or an asset it does not take), as faremeter's own facilitators answer. Asks the
   * chain only for the token's decimals and program (known tokens without asking).
   */
  async accepts(requirements: readonly unknown[]): Promise<Record<string, unknown>[]> {
    const out: Record<string, unknown>[] = [];
    for (const requirement of requirements) {
      if (typeof requirement !== 'object' || requirement === null || Array.isArray(requirement)) continue;
      const r = requirement as Record<string, unknown>;
      if (r.scheme !== 'exact' || typeof r.network !== 'string' || typeof r.asset !== 'string') continue;
      const network = caip2Of(r.network);
      const route = network === undefined ? undefined : this.routes.get(network);
      if (route === undefined) continue;
      const asset = canonicalAddress(r.asset);
      const known = this.deps.networks.tokensOf(route.chain.info.id);
      if (!known.some((t) => canonicalAddress(t.address) === asset)) continue;
      const sellerExtra =
        typeof r.extra === 'object' && r.extra !== null ? (r.extra as Record<string, unknown>) : {};
      const feePayer = this.routes.feePayerOf(network);
      const token =
        feePayer === undefined ? undefined : await route.chain.getTokenInfo(r.asset).catch(() => undefined);
      out.push({
        ...r,
        extra: {
          ...sellerExtra,
          ...(feePayer === undefined ? {} : { feePayer }),
          ...(token === undefined
            ? {}
            : { decimals: token.decimals, tokenProgram: SOLANA_TOKEN_PROGRAMS[token.program] }),
        },
      });
    }
    return out;
  }

  /** The route and requirements of a request, or why it cannot be served. */
  private resolve(paymentPayload: unknown, paymentRequirements: unknown): Resolved {
    const parsed = parsePaymentRequest(paymentPayload, paymentRequirements);
    return parsed.ok ? this.route(parsed.payment) : parsed;
  }

  /** The route of a parsed payment, or why it cannot be served. */
  route(
    payment: X402Payment,
  ):
    | { ok: true; route: Route; payment: X402Payment; requirements: ExactRequirements }
    | { ok: false; reason: X402Reason; message: string } {
    if (payment.scheme !== 'exact' && payment.scheme !== 'upto') {
      return {
        ok: false,
        reason: 'invalid_scheme',
        message: `scheme ${payment.scheme} is not supported; see GET /facilitator/supported`,
      };
    }
    if (payment.network === undefined || this.routes.get(payment.network) === undefined) {
      return {
        ok: false,
        reason: 'invalid_network',
        message: `network ${payment.networkAsSent} is not served here; see GET /facilitator/supported`,
      };
    }
    const route = this.routes.get(payment.network, payment.scheme);
    // x402 v1 has `exact` only; `upto` is served only where the chain carries what it needs.
    if (route === undefined || (route.name === 'upto' && payment.x402Version !== 2)) {
      return {
        ok: false,
        reason: 'invalid_scheme',
        message: `scheme ${payment.scheme} is not served on ${payment.networkAsSent} for x402 version ${payment.x402Version}; see GET /facilitator/supported`,
      };
    }
    // Nothing to pay: settling it would have the fee payer pay the network fee (gas) for a transfer of
    // nothing, at the asking of anyone holding a key. Refused as requirements, as an amount that is no
    // atomic amount is (parsePaymentRequest), on every route to a scheme: verify, settle, the receive routes.
    // upto: 0 is the actual amount of a settle that charges nothing (settleResolved), refused as a maximum (verifyResolved).
    if (payment.requirements.amount === 0n && route.name === 'exact') {
      return {
        ok: false,
        reason: 'invalid_payment_requirements',
        message: `paymentRequirements asks for 0 atomic units: ${payment.x402Version === 2 ? 'amount' : 'maxAmountRequired'} must be at least 1`,
      };
    }
    return {
      ok: true,
      route,
      payment,
      requirements: { ...payment.requirements, network: route.chain.info.id },
    };
  }

  /**
   * Asks the chain what the settlement needs, then signs it and stores it, claimed, in one database
   * transaction that waits on storage only; undefined when already claimed.
   */
  private async claim(
    route: Route,
    key: string,
    payment: X402Payment,
    requirements: ExactRequirements,
    asker: SettleAsker,
    claimedBy: SettlementClaimant | null,
  ): Promise<{ record: SettlementRecord; nonce: PreparedSettlementTx['nonce'] } | undefined> {
    const draft = await route.scheme.prepare(payment.payload, requirements);
    const network = route.chain.info.id;
    const lost = Symbol('lost');
    const startedAt = this.now();
    const day = feeDayOf(startedAt);
    const limit = this.budget.dailyLimit(route.chain.info);
    const escrowRent = isEscrowDeposit(route, key) ? await this.escrowRent(route) : undefined;
    try {
      return await this.deps.store.transaction(async (repos) => {
        // The worst-case fee first, in the claim's own transaction: concurrent settles of one account
        // each see the others' reservations, and a lost claim takes its reservation back with it.
        const reserved = await repos.sponsoredFees.reserve(
          asker.accountId,
          network,
          day,
          draft.maxFee,
          limit,
          startedAt,
        );
        if (reserved === undefined) throw this.overBudget(route.chain.info, draft.maxFee, limit, startedAt);
        // An escrow deposit holds the buyer's maximum until it is claimed, and the fee payer's rent until
        // its accounts are closed: one of the account's open deposits and its share of the account's rent
        // budget, taken here with the claim or refused before anything is stored or sent (upto-open-channels).
        if (escrowRent !== undefined) {
          const cap = this.budget.maxOpenUptoChannels;
          if (!(await takeOpenChannel(repos.sponsoredFees, asker.accountId, network, cap, startedAt)))
            throw new OpenChannelsExceeded(cap, route.chain.info.name);
          const rentLimit = this.budget.uptoChannelRentLimit(route.chain.info);
          const held = escrowRent.account + escrowRent.escrow;
          if (
            !(await takeChannelRent(
              repos.sponsoredFees,
              asker.accountId,
              network,
              held,
              rentLimit,
              startedAt,
            ))
          )
            throw new ChannelRentExceeded(
              `${this.budget.maxUptoChannelRent} ${route.chain.info.nativeCurrency.symbol}`,
              route.chain.info.name,
            );
        }
        const { nonceFloor, sponsoredApproval } = draft;
        // erc20ApprovalGasSponsoring: its funding transfer is signed with the fee payer's nonce before the
        // settlement's, all stored with the claim before anything is sent.
        const funding =
          sponsoredApproval?.funding === undefined || nonceFloor === undefined
            ? undefined
            : await sponsoredApproval.funding.sign(
                await repos.nonces.allocate(network, nonceFloor.address, nonceFloor.pending),
              );
        const nonce =
          nonceFloor === undefined
            ? undefined
            : await repos.nonces.allocate(network, nonceFloor.address, nonceFloor.pending);
        const prepared = await draft.sign(nonce);
        // Its stand-in at the same nonce, should the approval not take effect (runApprovalStep).
        const voided =
          sponsoredApproval === undefined || nonce === undefined
            ? undefined
            : await sponsoredApproval.signVoid(nonce);
        const at = this.now();
        const record: SettlementRecord = {
          key,
          network,
          payer: prepared.payer,
          payTo: canonicalAddress(requirements.payTo),
          asset: requirements.asset,
          amount: requirements.amount,
          transactionId: prepared.transactionId,
          signedTransaction: Buffer.from(prepared.wire).toString('base64'),
          lastValidBlockHeight: prepared.lastValidBlockHeight,
          status: 'claimed',
          error: null,
          paymentId: null,
          createdAt: at,
          updatedAt: at,
          // In the claim, before any broadcast: a crash after it leaves the finisher what it needs to
          // record the payment for the asking account, with the claiming request's key.
          claimedBy,
          resource: payment.resource ?? null,
          accountId: asker.accountId,
          sponsoredFee: { day, amount: draft.maxFee },
          sponsoredApproval:
            sponsoredApproval === undefined
              ? null
              : {
                  approvalTransaction: Buffer.from(sponsoredApproval.wire).toString('base64'),
                  approvalTransactionId: sponsoredApproval.transactionId,
                  fundingTransaction:
                    funding === undefined ? null : Buffer.from(funding.wire).toString('base64'),
                  fundingTransactionId: funding?.transactionId ?? null,
                  funded: funding === undefined ? 0n : (sponsoredApproval.funding?.amount ?? 0n),
                  voidTransaction: voided === undefined ? null : Buffer.from(voided.wire).toString('base64'),
                  voidTransactionId: voided?.transactionId ?? null,
                },
        };
        // Rolled back when lost, so an EVM nonce allocated for it is given back.
        if (!(await repos.settlements.claim(record))) throw lost;
        // One funding per buyer approval: another payment carrying it (or one of the same buyer nonce) funds none.
        if (
          sponsoredApproval !== undefined &&
          !(await repos.settlements.claimApproval(sponsoredApproval.key, key, startedAt))
        )
          throw new ApprovalInUse(sponsoredApproval.payer, sponsoredApproval.key);
        // A funding (never a buyer's own gas) is what a hostile buyer can take: see approval-funding-limits.
        if (sponsoredApproval !== undefined && funding !== undefined) {
          await takeFundingPlace(repos, {
            network,
            networkName: route.chain.info.name,
            payer: sponsoredApproval.payer,
            settlementKey: key,
            accountId: asker.accountId,
            day,
            limit: this.budget.maxUnsettledApprovalFundings,
            at: startedAt,
          });
        }
        return { record, nonce: prepared.nonce };
      });
    } catch (error) {
      if (error === lost) return undefined;
      throw error;
    }
  }

  /** FEE_BUDGET_EXCEEDED: the day's budget has no room for this settlement's worst-case fee. */
  private overBudget(network: NetworkInfo, fee: bigint, limit: bigint, at: number): GatewayError {
    const { symbol, decimals } = network.nativeCurrency;
    return new GatewayError('FEE_BUDGET_EXCEEDED', {
      message: `Your account's budget of network fees the facilitator pays on ${network.name} (${atomicToDecimalText(limit, decimals)} ${symbol} a day, UTC) has no room for this settlement's fee of up to ${atomicToDecimalText(fee, decimals)} ${symbol}; nothing was sent. It renews at 00:00 UTC.`,
      retryAfter: secondsUntilNextFeeDay(at),
    });
  }

  /**
   * A settlement left open (claimed or submitted) that nobody settles again: its settle answered
   * `settlement_pending`, or the process died after claiming it. Looks at the stored transaction
   * exactly as a retried settle would — resending the same bytes, never signing another — for at most
   * `waitMs`, and settles it (recording the seller's payment and its event), fails it (landed with an
   * error, or provably expired: past its lastValidBlockHeight and still unknown), or leaves it open.
   */
  async finish(settlement: SettlementRecord, waitMs: number): Promise<SettlementStatus | 'open'> {
    const route = this.routes.get(settlement.network, schemeOfSettlement(settlement));
    if (route === undefined || (settlement.status !== 'claimed' && settlement.status !== 'submitted'))
      return settlement.status;
    const decimals = await this.decimalsOf(route, settlement.asset);
    const step = await this.approveFirst(route, settlement, waitMs);
    if (step === 'pending') return 'open';
    if (step === 'void') {
      const voided = await this.voidSettlement(route, settlement, waitMs);
      return voided.kind === 'failed' ? 'failed' : 'open';
    }
    // Nobody receives this answer: the payment is the claiming request's (it answered
    // settlement_pending, or died), which finds it when retried with its Idempotency-Key.
    const outcome = await this.broadcastAndWait(
      route,
      settlement,
      decimals,
      false,
      settlement.claimedBy ?? null,
      waitMs,
    );
    switch (outcome.kind) {
      case 'settled':
        return 'settled';
      case 'failed':
        return 'failed';
      case 'duplicate':
        // Another writer (a settle retry, another instance) moved it first.
        return (await this.deps.store.settlements.get(settlement.key))?.status ?? 'open';
      case 'pending':
        return 'open';
    }
  }

  /**
   * A settlement found already claimed: settled is a duplicate; open ones are looked at, never re-signed
   * — by the account that asked for it (a retry after `settlement_pending`, here or on another instance).
   * Another account presenting the same payload only learns where it stands (`settlement_pending` while
   * open): it never moves the row, so the success of a settlement is always one of its own account's
   * requests, as it would be without it, and the finisher ends it if nobody of that account asks again.
   */
  private async resume(
    route: Route,
    settlement: SettlementRecord,
    holder: SettlementClaimant | null,
    asker: SettleAsker,
  ): Promise<Outcome> {
    if (settlement.status === 'settled') return { kind: 'duplicate', settlement };
    if (settlement.status === 'failed') {
      const message = settlement.error ?? 'failed';
      return message === VOIDED
        ? { kind: 'failed', settlement, message, reason: 'permit2_allowance_required' }
        : { kind: 'failed', settlement, message };
    }
    const recorder = recorderOf(settlement);
    if (recorder !== null && recorder !== asker.accountId) return { kind: 'pending', settlement };
    const decimals = await this.decimalsOf(route, settlement.asset);
    const step = await this.approveFirst(route, settlement);
    if (step === 'pending') return { kind: 'pending', settlement };
    if (step === 'void') return this.voidSettlement(route, settlement);
    return this.broadcastAndWait(route, settlement, decimals, false, holder);
  }

  /**
   * x402's erc20ApprovalGasSponsoring: the step before a settlement's own transaction (runApprovalStep),
   * run again as long as that transaction is not sent: `ready` for every settlement without the step.
   */
  private approveFirst(
    route: Route,
    settlement: SettlementRecord,
    waitMs = this.deps.settleWaitMs,
  ): Promise<ApprovalStepState> {
    return runApprovalStep(route.chain, route.scheme, settlement, waitMs, this.now());
  }

  /**
   * erc20ApprovalGasSponsoring, the approval did not take effect (superseded by another transaction of
   * the buyer's, or the allowance taken back): the settlement would revert at the fee payer's cost, so it
   * is never sent. The decision is stored first (SponsoredApprovalStep.voided, before the void transfer
   * is sent: a crash after it resends that transfer, never the settlement), then the stored void transfer
   * spends the settlement's nonce, and the settlement fails `permit2_allowance_required`, charged what the
   * step cost (the funding, its fee and the void transfer's 21,000 gas) and no settlement fee. The payer
   * keeps its funding place, so it is never funded again (approval-funding-limits).
   */
  private async voidSettlement(
    route: Route,
    settlement: SettlementRecord,
    waitMs = this.deps.settleWaitMs,
  ): Promise<Outcome> {
    const step = settlement.sponsoredApproval;
    if (step == null) return { kind: 'pending', settlement };
    let current = settlement;
    if (step.voided !== true) {
      const moved = await this.deps.store.settlements.transition(
        settlement.key,
        ['claimed'],
        'claimed',
        { sponsoredApproval: { ...step, voided: true } },
        this.now(),
      );
      // Another writer moved it first (it sent the settlement, or voided it): it answers for it.
      if (moved === undefined) return { kind: 'pending', settlement };
      current = moved;
    }
    const landed = await sendVoid(route.chain, step, waitMs);
    if (landed === 'pending') return { kind: 'pending', settlement: current };
    return this.markFailed(route, current, VOIDED, {
      ...(landed.fee === undefined ? {} : { fee: landed.fee }),
      reason: 'permit2_allowance_required',
    });
  }

  /**
   * Sends the stored bytes (again, if need be: the same bytes can land only once) and waits for them.
   * Confirmed → settled, with the payment recorded; whoever moves the row answers success, the others
   * `duplicate_settlement`.
   */
  private async broadcastAndWait(
    route: Route,
    settlement: SettlementRecord,
    decimals: number,
    first: boolean,
    holder: SettlementClaimant | null,
    waitMs = this.deps.settleWaitMs,
  ): Promise<Outcome> {
    const { chain } = route;
    const known = first ? undefined : await chain.getSignatureStatus(settlement.transactionId);
    let outcome: ConfirmationOutcome | undefined = known;
    if (outcome === undefined) {
      // Sent before and not mined (EVM: dropped from the pool, or its nonce taken by another
      // transaction): the chain says whether the payment was carried by someone else's transaction, or
      // provably never can be. A failed look changes nothing: the stored bytes are resent as before.
      const fate = first ? undefined : await this.fateOf(route, settlement).catch(() => undefined);
      if (fate !== undefined && fate !== 'never' && fate.transactionId === settlement.transactionId)
        return this.markSettled(route, settlement, decimals, fate.slot, holder);
      try {
        // Resent even when another transaction carried the payment or it can never be carried: mined, it
        // spends the fee payer's nonce (and reverts), so no later settlement waits behind a nonce gap.
        await chain.broadcast(Buffer.from(settlement.signedTransaction, 'base64'));
      } catch (error) {
        // A first broadcast the node refuses outright can never land; a resend may be refused only
        // because the transaction is already known or landed (or its nonce taken), which the wait
        // below tells apart.
        if (first && error instanceof ChainError && error.kind === 'rejected') {
          return this.markFailed(route, settlement, `the network refused the transaction: ${error.message}`, {
            neverSent: true,
            fee: 0n,
          });
        }
      }
      // The resent bytes may still be mined (and revert): the fee stays reserved.
      if (fate === 'never') return this.markFailed(route, settlement, NEVER_CARRIED);
      if (fate !== undefined) return this.markCarried(route, settlement, decimals, fate, holder);
      await this.deps.store.settlements.transition(settlement.key, ['claimed'], 'submitted', {}, this.now());
      outcome = await chain.waitForConfirmation(
        settlement.transactionId,
        settlement.lastValidBlockHeight ?? BigInt(Number.MAX_SAFE_INTEGER),
        waitMs,
      );
    }
    switch (outcome.status) {
      case 'confirmed':
      case 'finalized':
        return this.markSettled(route, settlement, decimals, outcome.slot, holder);
      case 'failed': {
        // EVM: it reverts when another transaction used the authorization first — then the buyer paid
        // the seller all the same, and that transaction is the settlement's. Unknown for now: left open.
        const fate = await this.fateOf(route, settlement).catch(() => 'unknown' as const);
        if (fate === 'unknown') return { kind: 'pending', settlement };
        if (fate !== undefined && fate !== 'never')
          return this.markCarried(route, settlement, decimals, fate, holder);
        // Landed with an error: the fee payer paid its fee all the same.
        const landed = await chain.getTransaction(settlement.transactionId).catch(() => undefined);
        return this.markFailed(route, settlement, `the transaction failed on chain: ${outcome.error}`, {
          ...(landed?.fee === undefined ? {} : { fee: landed.fee }),
        });
      }
      case 'expired':
        // Never landed, and never can: the fee payer paid nothing.
        return this.markFailed(route, settlement, 'the transaction expired before it landed', { fee: 0n });
      case 'pending':
        return { kind: 'pending', settlement };
    }
  }

  /**
   * Where the settlement's own transaction is not the last word (EVM): the transaction that carried
   * its payment, `never` once it provably cannot be carried, undefined while it may still be.
   */
  private async fateOf(
    route: Route,
    settlement: SettlementRecord,
  ): Promise<LandedPayment | 'never' | undefined> {
    if (route.scheme.findSettled === undefined) return undefined;
    const signed = new Uint8Array(Buffer.from(settlement.signedTransaction, 'base64'));
    return route.scheme.findSettled(signed, settlement.createdAt);
  }

  /** The payment was carried on chain: by the settlement's own transaction, or by another one. */
  private markCarried(
    route: Route,
    settlement: SettlementRecord,
    decimals: number,
    landed: LandedPayment,
    holder: SettlementClaimant | null,
  ): Promise<Outcome> {
    return landed.transactionId === settlement.transactionId
      ? this.markSettled(route, settlement, decimals, landed.slot, holder)
      : this.markSettled(route, settlement, decimals, landed.slot, holder, landed.transactionId);
  }

  /**
   * Settled, with the seller's payment recorded once. `carrier`: another transaction than the
   * settlement's own carried the payment (someone else submitted the authorization) — a seller's local
   * receipt of the same payload can find that transaction too, so the payload's consumed proof decides
   * which of the two records it; the settlement then names that transaction.
   *
   * `holder`: the request whose answer the payment is — the settle request that moves the row, or, for
   * the finisher, the request that claimed it. The payment carries its Idempotency-Key (for its own
   * account only, and only a key no payment carries yet), so that request, retried with the key after
   * its answer was lost or was `settlement_pending`, is answered this payment (X402ReceiveService), and
   * any other request presenting the payload is refused it as a duplicate: one answer per payment.
   *
   * The payment is recorded for the account that asked to settle (recorderOf), never for whoever else
   * holds the payTo address; its fee, charged to that account's budget, becomes what its own
   * transaction paid (another transaction carrying the payment leaves the worst case charged: its own
   * resent bytes may still be mined and revert).
   */
  private async markSettled(
    route: Route,
    settlement: SettlementRecord,
    decimals: number,
    slot: bigint,
    holder: SettlementClaimant | null,
    carrier?: string,
  ): Promise<Outcome> {
    const { chain } = route;
    const signature = carrier ?? settlement.transactionId;
    const recorder = recorderOf(settlement);
    const [blockHeight, tx] = await Promise.all([
      chain.blockHeightOf(slot).catch(() => null),
      chain.getTransaction(signature).catch(() => undefined),
    ]);
    const at = this.now();
    const key = holder !== null && recorder === holder.accountId ? holder.idempotencyKey : null;
    const fee = await this.withApprovalCost(route, settlement, carrier === undefined ? tx?.fee : undefined);
    const rentBack = await this.rentBackOfClaim(route, settlement);
    const payment =
      recorder === null || movesNothingToSeller(route, settlement)
        ? undefined
        : newPayment(at, {
            id: newId('pay'),
            accountId: recorder,
            direction: 'received',
            mode: 'facilitator',
            status: 'confirmed',
            network: chain.info.id,
            walletAddress: settlement.payTo,
            sender: settlement.payer,
            recipient: settlement.payTo,
            amount: settlement.amount,
            asset: { address: settlement.asset, decimals },
            resource: settlement.resource ?? null,
            fee: tx?.fee ?? null,
            signature,
            slot,
            blockHeight,
            confirmedAt: at,
          });
    const lost = Symbol('lost');
    let moved: SettlementRecord | undefined;
    try {
      moved = await this.deps.store.transaction(async (repos) => {
        const proofKey = x402ReceiptProofKey(settlement.key);
        const record =
          payment !== undefined &&
          (carrier === undefined ||
            (await repos.proofs.consume(proofKey, payment.id, payment.accountId, at)));
        // A key already on a payment (kept longer than the key itself, 24 h) is not given to a second one.
        const keyed =
          payment === undefined ||
          key === null ||
          (await repos.payments.findByIdempotencyKey(payment.accountId, key)) !== undefined
            ? payment
            : { ...payment, idempotencyKey: key };
        // Recorded by the seller's local receipt of the payload (the one that consumed the proof, and
        // names it in x402Receipts under the same key): the settlement names that payment.
        const paymentId = record
          ? payment.id
          : carrier === undefined
            ? null
            : ((await repos.x402Receipts.get(proofKey)) ?? null);
        const row = await repos.settlements.transition(
          settlement.key,
          ['claimed', 'submitted'],
          'settled',
          {
            paymentId,
            ...(carrier === undefined ? {} : { transactionId: carrier }),
            ...charged(settlement, fee),
          },
          at,
        );
        // Another writer settled it first: the proof consumed above is given back with the rollback.
        if (row === undefined) throw lost;
        await this.chargeIn(repos, settlement, fee, at);
        await releaseFundingPlace(repos, settlement, at);
        // An escrow claimed: its deposit's place is free, and the rent its close gave back is off the budget.
        if (rentBack !== undefined) {
          await releaseOpenChannel(repos.sponsoredFees, settlement, at);
          await releaseChannelRent(repos.sponsoredFees, settlement, rentBack, at);
        }
        if (record && keyed !== undefined) await this.deps.ledger.recordIn(repos, keyed, 'payment.received');
        return row;
      });
    } catch (error) {
      if (error !== lost) throw error;
    }
    if (moved === undefined) return { kind: 'duplicate', settlement };
    this.reportFee(route, moved);
    return { kind: 'settled', settlement: moved };
  }

  /**
   * Failed: landed with an error, or can never land. `fee`: what the fee payer finally paid for it
   * (0 when it never reached the chain); absent, the reserved worst case stays charged.
   */
  private async markFailed(
    route: Route,
    settlement: SettlementRecord,
    message: string,
    options: { readonly neverSent?: boolean; readonly fee?: bigint; readonly reason?: X402Reason } = {},
  ): Promise<Outcome> {
    const at = this.now();
    const fee = await this.withApprovalCost(route, settlement, options.fee);
    const deposit = isEscrowDeposit(route, settlement.key);
    const rent = deposit ? await this.escrowRent(route).catch(() => undefined) : undefined;
    const moved = await this.deps.store.transaction(async (repos) => {
      const row = await repos.settlements.transition(
        settlement.key,
        ['claimed', 'submitted'],
        'failed',
        { error: message, ...charged(settlement, fee) },
        at,
      );
      if (row !== undefined) await this.chargeIn(repos, settlement, fee, at);
      // A failed deposit opened no channel: its place among the account's open deposits and the rent it
      // reserved are free again.
      if (row !== undefined && deposit) {
        await releaseOpenChannel(repos.sponsoredFees, settlement, at);
        if (rent !== undefined)
          await releaseChannelRent(repos.sponsoredFees, settlement, rent.account + rent.escrow, at);
      }
      return row;
    });
    if (moved !== undefined) this.reportFee(route, moved);
    return {
      kind: 'failed',
      settlement,
      message,
      neverSent: options.neverSent === true,
      ...(options.reason === undefined ? {} : { reason: options.reason }),
    };
  }

  /** The rent one escrow of this route holds of the fee payer's (UptoEscrow.rent). */
  private escrowRent(route: Route): Promise<EscrowRent> {
    const escrow = route.name === 'upto' ? route.scheme.escrow : undefined;
    if (escrow === undefined) throw new Error(`${route.chain.info.name} has no escrow upto`);
    return escrow.rent();
  }

  /**
   * An escrow claim that landed: the rent its close gave back to the fee payer — the escrow token
   * account's, and the channel account's when the claim came late enough for the program to close it
   * too (otherwise the sweep's reclaim gives it back). Undefined for any other settlement. When the chain
   * cannot be asked, the channel account is counted as still held (the safe side).
   */
  private async rentBackOfClaim(route: Route, settlement: SettlementRecord): Promise<bigint | undefined> {
    const escrow = route.name === 'upto' ? route.scheme.escrow : undefined;
    if (escrow === undefined || !escrow.isClaim(settlement.key)) return undefined;
    const rent = await escrow.rent().catch(() => undefined);
    if (rent === undefined) return 0n;
    const held = await escrow.holdsAccount(settlement.key).catch(() => true);
    return rent.escrow + (held ? 0n : rent.account);
  }

  /**
   * Corrects the account's budget from the reserved worst case to `fee`, in the transaction that moves
   * the settlement (only its one mover gets here), on the day the reservation was charged to.
   */
  private async chargeIn(
    repos: Repositories,
    settlement: SettlementRecord,
    fee: bigint | undefined,
    at: number,
  ): Promise<void> {
    const { accountId, sponsoredFee } = settlement;
    if (fee === undefined || accountId == null || sponsoredFee == null) return;
    await repos.sponsoredFees.adjust(
      accountId,
      settlement.network,
      sponsoredFee.day,
      fee - sponsoredFee.amount,
      at,
    );
  }

  /**
   * A settlement's final fee with what its erc20ApprovalGasSponsoring step cost (the buyer's funding and
   * its transfer's fee); undefined, keeping the worst case charged, while either is unknown.
   */
  private async withApprovalCost(
    route: Route,
    settlement: SettlementRecord,
    fee: bigint | undefined,
  ): Promise<bigint | undefined> {
    if (fee === undefined || settlement.sponsoredApproval == null) return fee;
    const cost = await approvalStepCost(route.chain, settlement.sponsoredApproval);
    return cost === undefined ? undefined : fee + cost;
  }

  /** The fee a settlement finally cost its account, once it is settled or failed. */
  private reportFee(route: Route, settlement: SettlementRecord): void {
    const { accountId, sponsoredFee } = settlement;
    if (accountId == null || sponsoredFee == null) return;
    this.deps.sponsoredFees?.feeSponsored(accountId, route.chain.info, sponsoredFee.amount);
  }

  private async decimalsOf(route: Route, asset: string): Promise<number> {
    const known = route.chain.info.tokens.find((t) => t.address === asset);
    if (known !== undefined) return known.decimals;
    return (await route.chain.getTokenInfo(asset))?.decimals ?? 0;
  }

  /**
   * The x402 answer to `asker`. A settlement another account asked for (claimed first) is never this
   * one's success, even when this request is the one that saw it confirm: it is that account's
   * payment, and this one is answered `duplicate_settlement`.
   */
  private answer(outcome: Outcome, network: string, asker: SettleAsker, route: Route): SettleAnswer {
    const { settlement } = outcome;
    const common = {
      payer: settlement.payer,
      transaction: settlement.transactionId,
      network,
      // upto: what the settlement moves (the actual amount), as x402's SettleResponse `amount` says it.
      ...(route.name === 'upto' ? { amount: settlement.amount.toString() } : {}),
    };
    // Settlements claimed before the asking account was kept (recorder null) answer their mover, as then.
    const recorder = recorderOf(settlement);
    const kind =
      outcome.kind === 'settled' && recorder !== null && recorder !== asker.accountId
        ? 'duplicate'
        : outcome.kind;
    switch (kind) {
      case 'settled':
        return { success: true, ...common };
      case 'duplicate':
        return {
          success: false,
          errorReason: 'duplicate_settlement',
          errorMessage: `this payment was already settled by ${settlement.transactionId}`,
          ...common,
        };
      case 'pending':
        return {
          success: false,
          errorReason: 'settlement_pending',
          errorMessage: `the transaction was sent but not confirmed within ${Math.round(this.deps.settleWaitMs / 1000)} s; settle again to look at it (it is never sent twice)`,
          ...common,
        };
      case 'failed':
        return {
          success: false,
          errorReason:
            outcome.kind === 'failed' ? (outcome.reason ?? 'transaction_failed') : 'transaction_failed',
          errorMessage: outcome.kind === 'failed' ? outcome.message : 'failed',
          ...common,
        };
    }
  }
}

type Resolved =
  | { ok: true; route: Route; payment: X402Payment; requirements: ExactRequirements }
  | { ok: false; reason: X402Reason; message: string };

type Outcome =
  | { readonly kind: 'settled' | 'duplicate' | 'pending'; readonly settlement: SettlementRecord }
  | {
      readonly kind: 'failed';
      readonly settlement: SettlementRecord;
      readonly message: string;
      /** The node refused the first broadcast: the transaction never entered the pool. */
      readonly neverSent?: boolean;
      /** The x402 reason it is answered with; `transaction_failed` when absent. */
      readonly reason?: X402Reason;
    };

/** A scheme's refusal as x402's VerifyResponse. */
function invalid(refusal: ExactRefusal): VerifyAnswer {
  return {
    isValid: false,
    invalidReason: refusal.reason,
    invalidMessage: refusal.message,
    ...(refusal.payer === undefined ? {} : { payer: refusal.payer }),
  };
}

/**
 * The account a settlement's payment is recorded for: the one that asked to settle it. Settlements
 * claimed before the asking account was kept (migration 0020) fall back to a claiming POST
 * /payment/receive's account, and otherwise are recorded for nobody — never for whoever holds payTo.
 */
function recorderOf(settlement: SettlementRecord): string | null {
  return settlement.accountId ?? settlement.claimedBy?.accountId ?? null;
}

/** An escrow's deposit (the maximum into escrow), or a claim of 0: no payment to record for the seller. */
function movesNothingToSeller(route: Route, settlement: SettlementRecord): boolean {
  const escrow = route.name === 'upto' ? route.scheme.escrow : undefined;
  return escrow !== undefined && (escrow.isDeposit(settlement.key) || settlement.amount === 0n);
}

/** The settlement row's fee change for a final `fee`, when one was reserved. */
/** Whether the settlement `key` is the deposit of an escrow `upto` (it opens a channel; see UptoOpenChannels). */
function isEscrowDeposit(route: Route, key: string): boolean {
  return route.name === 'upto' && route.scheme.escrow?.isDeposit(key) === true;
}

function charged(settlement: SettlementRecord, fee: bigint | undefined): { sponsoredFee?: bigint } {
  return fee === undefined || settlement.sponsoredFee == null ? {} : { sponsoredFee: fee };
}

/**
 * Whether a settlement carries the payment these requirements ask for. upto: the amount is the seller's
 * choice at settle (the settlement's is the actual amount, the requirements' the maximum at verify, or
 * another actual amount at a retried settle), so the payload's identity (the key), network, recipient
 * and asset decide: a retried settle of it, whatever amount it asks, is answered that settlement.
 */
function settles(route: Route, settlement: SettlementRecord, requirements: ExactRequirements): boolean {
  return (
    settlement.network === requirements.network &&
    settlement.payTo === canonicalAddress(requirements.payTo) &&
    canonicalAddress(settlement.asset) === canonicalAddress(requirements.asset) &&
    (route.name === 'upto' || settlement.amount === requirements.amount)
  );
}

/**
 * The scheme a stored settlement belongs to, from its key: every `upto` scheme keys its settlements
 * `<network>:upto:…` (UptoScheme.settlementKey); every other key is `exact`'s.
 */
function schemeOfSettlement(settlement: SettlementRecord): SchemeName {
  return settlement.key.startsWith(`${settlement.network}:upto:`) ? 'upto' : 'exact';
}

/** The x402 version a facilitator request's payload states (2 when it states none it could be). */
function versionOf(paymentPayload: unknown): number {
  const v =
    typeof paymentPayload === 'object' && paymentPayload !== null
      ? (paymentPayload as Record<string, unknown>).x402Version
      : undefined;
  return v === 1 ? 1 : 2;
}

function stringField(value: unknown, field: string): string {
  const v =
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[field] : undefined;
  return typeof v === 'string' ? v : '';
}
