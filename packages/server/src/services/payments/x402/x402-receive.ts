import { canonicalAddress } from '../../../chains/canonical-address.ts';
import type { ChainAdapter } from '../../../chains/chain-adapter.ts';
import { chainFamily } from '../../../chains/chain-families.ts';
import { addressFamily } from '../../../domain/address.ts';
import { GatewayError, invalidParameters } from '../../../domain/gateway-error.ts';
import { newId } from '../../../domain/ids.ts';
import type { PaymentRecord } from '../../../domain/records/payment-records.ts';
import { type OutboundPolicy, OutboundUrlError } from '../../../outbound/ssrf-guard.ts';
import type { Store } from '../../../store/store.ts';
import { caip2Of } from '../../../x402/network-names.ts';
import type { X402Header } from '../../../x402/payment-header.ts';
import { resourceUrl, schemePayloadOf, type X402Payment } from '../../../x402/payment-request.ts';
import { RemoteFacilitator, RemoteFacilitatorError } from '../../../x402/remote-facilitator.ts';
import type { FacilitatorService } from '../../facilitator/facilitator-service.ts';
import { atomicFromField } from '../amounts.ts';
import { newPayment } from '../new-payment.ts';
import { assetMismatch, isSameAsset, nativeAssetOf, type PaymentAsset } from '../payment-asset.ts';
import type { PaymentLedger } from '../payment-ledger.ts';
import { invalidProof, verificationFailed } from '../proofs/proof-errors.ts';
import { type ReceiveResult, receiveResult, type VerifyResult } from '../receive-result.ts';

export interface X402ReceiveInput {
  readonly walletAddress: string;
  readonly header: X402Header;
  /** The least that must be paid: whole units of `asset` (USDC: 0.01), or atomic units. */
  readonly expected: { readonly whole: number; readonly field: string } | { readonly atomic: bigint };
  /**
   * What the seller asked to be paid in; undefined: the native currency of the payment's network, which
   * x402 `exact` never pays (it moves tokens), so such a payload is refused `asset_mismatch`.
   */
  readonly asset?: PaymentAsset | undefined;
  readonly resource?: string | undefined;
  /** The network (CAIP-2 id) the payment must be on (the routes always pin one); undefined accepts any served. */
  readonly network?: string | undefined;
  /** An x402 facilitator to verify and settle with instead of the built-in one. */
  readonly facilitatorUrl?: string | undefined;
  /** Sent as the Authorization header to `facilitatorUrl` only (e.g. `Bearer <its API key>`). */
  readonly facilitatorAuthorization?: string | undefined;
  readonly timeoutMs: number;
}

export interface X402ReceiveDeps {
  readonly store: Store;
  readonly facilitator: FacilitatorService;
  readonly ledger: PaymentLedger;
  readonly outbound: OutboundPolicy;
  readonly now?: () => number;
}

/**
 * Standard x402 payloads (v1 `X-PAYMENT`, v2 `PAYMENT-SIGNATURE`) given to the gateway's own endpoints
 * as `paymentProof`: verified and settled by the built-in facilitator, or by the facilitator at
 * `facilitatorUrl`. The seller's wallet is the payTo, and the seller's stated asset (not the payload's) is
 * the asset: a payload naming another is refused `asset_mismatch` before anything is settled, and the
 * requirements the facilitator checks the transfer against name the stated one. `expectedAmount` is in
 * its whole units (USDC 0.01 is 10,000 atomic units). A refusal is
 * PAYMENT_VERIFICATION_FAILED with the facilitator's reason; a payment settled before is
 * INVALID_PAYMENT_PROOF `already_used`.
 */
export class X402ReceiveService {
  private readonly now: () => number;

  constructor(private readonly deps: X402ReceiveDeps) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * Verifies and settles; the settled payment is recorded for the caller's wallet. With an
   * Idempotency-Key (built-in facilitator), the payment carries it, whichever path records it (see
   * FacilitatorService.markSettled).
   */
  async receive(accountId: string, input: X402ReceiveInput, idempotencyKey?: string): Promise<ReceiveResult> {
    const started = performance.now();
    // One deadline for the whole exchange with a remote facilitator: `timeout` bounds its GET
    // /supported (v1 Solana), verification and settlement together.
    const deadline = this.now() + input.timeoutMs;
    const { payment, chain, asset } = await this.paymentOf({
      ...input,
      timeoutMs: Math.max(1, deadline - this.now()),
    });
    const record =
      input.facilitatorUrl === undefined
        ? await this.settleHere(payment, accountId, idempotencyKey)
        : await this.settleRemotely(accountId, input, payment, chain, asset.decimals, deadline);
    return receiveResult(record, asset, started);
  }

  /** Verifies only (spec §4.5): nothing is settled or consumed. */
  async verify(input: X402ReceiveInput): Promise<VerifyResult> {
    try {
      const { payment: toSettle, chain, asset } = await this.paymentOf(input);
      // upto: what is verified is the maximum the buyer signed (paymentOf checked it covers `amount`), as
      // a stock seller verifies before its handler; `amount` is what the seller would settle of it.
      const payment =
        input.facilitatorUrl === undefined ? (this.uptoTerms(toSettle)?.offered ?? toSettle) : toSettle;
      const answer =
        input.facilitatorUrl === undefined
          ? await this.deps.facilitator.verifyPayment(payment)
          : await this.remote(input).call('verify', requestBody(payment, input), input.timeoutMs);
      if (answer.isValid === true) {
        return {
          verified: true,
          transaction_id: this.deps.facilitator.identityOf(payment) ?? '',
          network: chain.info.id,
          asset: { ...asset },
        };
      }
      if (isOtherAsset(answer.invalidReason)) {
        const error = assetMismatch(asset, 'another token', chain);
        return { verified: false, reason: 'asset_mismatch', message: error.message };
      }
      return {
        verified: false,
        reason:
          typeof answer.invalidReason === 'string'
            ? bounded(answer.invalidReason, MAX_REASON_LENGTH)
            : 'invalid',
        message:
          typeof answer.invalidMessage === 'string'
            ? bounded(answer.invalidMessage, MAX_MESSAGE_LENGTH)
            : 'the facilitator refused the payment',
      };
    } catch (error) {
      if (
        error instanceof GatewayError &&
        (error.code === 'INVALID_PAYMENT_PROOF' || error.code === 'PAYMENT_VERIFICATION_FAILED')
      ) {
        return { verified: false, reason: error.details?.paymentProof ?? 'invalid', message: error.message };
      }
      throw error;
    }
  }

  /**
   * A `duplicate_settlement` is `already_used`, except for the request that the settlement's payment
   * answers: retried with its Idempotency-Key after its answer was lost (its instance died after the
   * settlement recorded the payment) or was `settlement_pending` (the payment recorded since, by a retry
   * or the settlement finisher), the payment carrying that key is this settlement's, and is answered
   * again. Another key, or none, is refused: a payment header replayed for a second purchase.
   */
  private async settleHere(
    payment: X402Payment,
    accountId: string,
    idempotencyKey: string | undefined,
  ): Promise<PaymentRecord> {
    // Settled for this account: the payment is recorded for it (and its fee charged to it), whoever else holds payTo.
    const answer = await this.deps.facilitator.settlePayment(await this.escrowFirst(payment, accountId), {
      accountId,
      idempotencyKey,
    });
    if (!answer.success && answer.errorReason === 'duplicate_settlement' && idempotencyKey !== undefined) {
      const earlier = await this.deps.store.payments.findByIdempotencyKey(accountId, idempotencyKey);
      if (
        earlier !== undefined &&
        earlier.id === answer.paymentId &&
        earlier.direction === 'received' &&
        canonicalAddress(earlier.walletAddress) === canonicalAddress(payment.requirements.payTo)
      ) {
        return earlier;
      }
    }
    if (!answer.success && answer.errorReason === 'duplicate_settlement' && answer.paymentId !== undefined) {
      // Its settlement left the chain and could not land again (FinalityWatch): refused as a gateway
      // proof of a reverted payment is, not as a payment still standing.
      const earlier = await this.deps.store.payments.get(answer.paymentId);
      if (earlier?.status === 'reverted')
        throw verificationFailed(
          'the payment this proof settled was reverted by a chain reorganisation',
          'reverted',
        );
    }
    if (!answer.success) throw refusal(answer.errorReason, answer.errorMessage, answer.transaction);
    const recorded =
      answer.paymentId === undefined ? undefined : await this.deps.store.payments.get(answer.paymentId);
    if (recorded === undefined) throw new Error(`settlement ${answer.transaction} recorded no payment`);
    return recorded;
  }

  /**
   * x402 `upto` where the maximum goes into escrow first (Solana's payment channel): a stock seller settles
   * it twice around its handler — the DEPOSIT of the signed maximum, then the CLAIM of what it earned — and
   * receive is one call, so it makes both: the deposit here, and the claim (`expectedAmount`, the rest of
   * the deposit back to the buyer in the same transaction) returned for settleHere, which records it. A
   * deposit settled before (this proof's receive retried after its answer was lost, or a paywall's) goes
   * on to the claim, which is settled once per payload, only for the account that deposited: the same
   * proof again is `already_used`. Any other payment is returned as it is.
   */
  private async escrowFirst(payment: X402Payment, accountId: string): Promise<X402Payment> {
    const terms = this.uptoTerms(payment);
    if (terms?.escrowed !== true) return payment;
    const deposit = await this.deps.facilitator.settlePayment(
      { ...terms.offered, payload: { ...payment.payload, type: 'deposit' } },
      { accountId },
    );
    if (!deposit.success && deposit.errorReason !== 'duplicate_settlement') {
      throw refusal(deposit.errorReason, deposit.errorMessage, deposit.transaction);
    }
    return {
      ...payment,
      payload: { ...payment.payload, type: 'claim' },
      requirements: { ...terms.offered.requirements, amount: payment.requirements.amount },
    };
  }

  /**
   * An `upto` payment (built-in facilitator) as the buyer was offered it: its requirements ask for the
   * signed maximum, and where it is escrowed first they name the built-in facilitator's own fee payer and
   * receiver authorizer whatever the payload's copy of them says — the caller holds no voucher key, so an
   * open whose vouchers another key signs could never be claimed here: it is refused before it is sent.
   * Throws `amount_too_low` when the signed maximum does not cover the amount asked. Undefined for any
   * other payment.
   */
  private uptoTerms(payment: X402Payment): { offered: X402Payment; escrowed: boolean } | undefined {
    const upto =
      payment.scheme === 'upto' && payment.network !== undefined
        ? this.deps.facilitator.uptoSchemeFor(payment.network)
        : undefined;
    const maximum = upto?.signedMaximum(payment.payload)?.amount;
    if (upto === undefined || maximum === undefined) return undefined;
    // paymentOf compared the amount with the payload's `accepted` copy, which no signature covers.
    if (maximum < payment.requirements.amount) {
      throw verificationFailed(
        `the payment signs at most ${maximum} atomic units, less than the expected ${payment.requirements.amount}`,
        'amount_too_low',
      );
    }
    const escrowed = upto.escrow !== undefined;
    const extra = escrowed
      ? { ...payment.requirements.extra, ...(upto.supportedExtra() ?? {}) }
      : payment.requirements.extra;
    return {
      offered: { ...payment, requirements: { ...payment.requirements, amount: maximum, extra } },
      escrowed,
    };
  }

  private async settleRemotely(
    accountId: string,
    input: X402ReceiveInput,
    payment: X402Payment,
    chain: ChainAdapter,
    decimals: number,
    deadline: number,
  ): Promise<PaymentRecord> {
    let settled: { readonly transaction: string; readonly payer: string | undefined };
    try {
      settled = await this.askToSettle(input, payment, chain, deadline);
    } catch (error) {
      // The facilitator's answer lost on the way (a timeout, a dropped connection), or a refusal of a
      // payload it settled before, when that answer was lost: the payment may have happened all the same,
      // and the chain says whether it did. Found, it is recorded as this request's (once, as any other).
      const landed = await this.paidOnChain(payment, error);
      if (landed === undefined) throw error;
      settled = { transaction: landed.transactionId, payer: landed.payer };
    }
    const at = this.now();
    const record = newPayment(at, {
      id: newId('pay'),
      accountId,
      direction: 'received',
      mode: 'facilitator',
      status: 'confirmed',
      network: chain.info.id,
      walletAddress: input.walletAddress,
      sender: settled.payer === undefined ? '' : canonicalAddress(settled.payer),
      recipient: input.walletAddress,
      amount: payment.requirements.amount,
      asset: { address: payment.requirements.asset, decimals },
      resource: payment.resource ?? null,
      signature: settled.transaction,
      confirmedAt: at,
    });
    // The remote facilitator settles once too; this keeps one transaction from paying twice here.
    const proofKey = `x402:${chain.info.id}:${settled.transaction}`;
    const consumed = await this.deps.store.transaction(async (repos) => {
      if (!(await repos.proofs.consume(proofKey, record.id, accountId, at))) return false;
      await this.deps.ledger.recordIn(repos, record, 'payment.received');
      return true;
    });
    if (!consumed) throw invalidProof('this payment proof was already used', 'already_used');
    return record;
  }

  /** Verification, then settlement, by the facilitator at `facilitatorUrl`: its transaction and payer. */
  private async askToSettle(
    input: X402ReceiveInput,
    payment: X402Payment,
    chain: ChainAdapter,
    deadline: number,
  ): Promise<{ readonly transaction: string; readonly payer: string | undefined }> {
    const remote = this.remote(input);
    const body = requestBody(payment, input);
    const left = () => Math.max(1, deadline - this.now());
    const verified = await this.ask(() => remote.call('verify', body, left()));
    if (verified.isValid !== true) throw refusal(verified.invalidReason, verified.invalidMessage);
    const settled = await this.ask(() => remote.call('settle', body, left()));
    const transaction = typeof settled.transaction === 'string' ? settled.transaction : '';
    if (settled.success !== true || transaction === '') {
      throw refusal(settled.errorReason, settled.errorMessage, transaction);
    }
    // Stored as the payment's signature and sender: only what the chain could have written is kept (a
    // facilitator's answer is any text, NUL included, which PostgreSQL refuses to store).
    if (!chainFamily(chain.info.family).isTransactionId(transaction)) {
      throw verificationFailed(
        `the facilitator's settle answer names no ${chain.info.name} transaction`,
        'facilitator_error',
        // It may have settled all the same: asked again, the request looks again.
        { final: false },
      );
    }
    const payer = [settled.payer, verified.payer].find(
      (p): p is string => typeof p === 'string' && addressFamily(p) === chain.info.family,
    );
    return { transaction, payer };
  }

  /**
   * The payment on chain of a payload the facilitator at `facilitatorUrl` did not answer as settled
   * (`failure`): undefined unless the payload pays these very requirements (its terms, checked here, not
   * by the facilitator) and its transfer landed and succeeded within RECOVERY_WINDOW_MS. Only a refusal
   * or a lost answer is looked into: a facilitatorUrl refused before anything was sent is not.
   */
  private async paidOnChain(payment: X402Payment, failure: unknown) {
    if (
      !(failure instanceof GatewayError) ||
      (failure.code !== 'PAYMENT_VERIFICATION_FAILED' && failure.code !== 'INVALID_PAYMENT_PROOF')
    ) {
      return undefined;
    }
    const routed = this.deps.facilitator.route(payment);
    if (!routed.ok) return undefined;
    const { route, requirements } = routed;
    const { scheme } = route;
    if (scheme.findPaid === undefined) return undefined;
    if ((await scheme.checkTerms(payment.payload, requirements)) !== undefined) return undefined;
    const landed = await scheme
      .findPaid(payment.payload, requirements, this.now() - RECOVERY_WINDOW_MS)
      // The chain unreachable: the facilitator's own answer stands.
      .catch(() => undefined);
    return landed?.error === null ? landed : undefined;
  }

  /**
   * The Solana fee payer of the facilitator that settles: the built-in one's own key, or what the
   * facilitator at `facilitatorUrl` lists in GET /supported (`kinds[].extra.feePayer`) for the network.
   */
  private async feePayerFor(
    input: X402ReceiveInput,
    network: string,
    networkAsSent: string,
  ): Promise<string | undefined> {
    if (input.facilitatorUrl === undefined) return this.deps.facilitator.feePayerOf(network);
    const remote = this.remote(input);
    const supported = await this.ask(() => remote.supported(input.timeoutMs));
    const kinds = Array.isArray(supported.kinds) ? (supported.kinds as unknown[]) : [];
    for (const kind of kinds) {
      if (typeof kind !== 'object' || kind === null) continue;
      const k = kind as Record<string, unknown>;
      const extra = k.extra as Record<string, unknown> | undefined;
      if (
        k.scheme === 'exact' &&
        (k.network === networkAsSent || k.network === network) &&
        typeof extra?.feePayer === 'string'
      ) {
        return extra.feePayer;
      }
    }
    throw verificationFailed(
      `the facilitator at facilitatorUrl lists no exact fee payer for ${networkAsSent} in GET /supported`,
      'invalid_network',
    );
  }

  private remote(input: X402ReceiveInput): RemoteFacilitator {
    return new RemoteFacilitator(
      input.facilitatorUrl ?? '',
      this.deps.outbound,
      input.facilitatorAuthorization,
    );
  }

  private async ask(call: () => Promise<Record<string, unknown>>): Promise<Record<string, unknown>> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof OutboundUrlError) throw invalidParameters({ facilitatorUrl: error.reason });
      if (error instanceof RemoteFacilitatorError) {
        // Unreachable, or its answer lost: it may have settled all the same, so asked again, the request looks again.
        throw verificationFailed(error.message, 'facilitator_error', { final: false });
      }
      throw error;
    }
  }

  /**
   * The x402 payment the header carries, as requirements the seller's wallet and amount must meet.
   * `sellerPays`: local mode, where the seller's wallet is the Solana fee payer, not this facilitator.
   */
  async paymentOf(
    input: X402ReceiveInput,
    options: { readonly sellerPays?: boolean } = {},
  ): Promise<{ payment: X402Payment; chain: ChainAdapter; asset: PaymentAsset }> {
    const { header } = input;
    const accepted = header.x402Version === 2 ? header.value.accepted : undefined;
    const networkAsSent = header.x402Version === 2 ? header.value.accepted.network : header.value.network;
    const scheme = header.x402Version === 2 ? header.value.accepted.scheme : header.value.scheme;
    const network = caip2Of(networkAsSent);
    const chain = this.deps.facilitator.chainOf(network);
    if (chain === undefined) {
      throw invalidProof(
        `the payment is for network ${networkAsSent}, which this gateway does not serve`,
        'invalid_network',
      );
    }
    if (input.network !== undefined && chain.info.id !== input.network) {
      throw invalidProof(
        `the payment is for network ${networkAsSent}, not ${input.network}`,
        'network_mismatch',
      );
    }
    if (
      accepted !== undefined &&
      canonicalAddress(accepted.payTo) !== canonicalAddress(input.walletAddress)
    ) {
      throw invalidProof('the payment pays another recipient', 'recipient_mismatch');
    }
    // A v2 payload names the resource its buyer was asked to pay for (the 402's `resource.url`, copied by
    // the client). A seller that names one asks whether this payment was for it, as with a gate402 proof;
    // a payload naming none (v1, or a client that left it out) is not refused for that: x402 does not
    // require it, and its signature does not cover it, so it binds nothing a seller could rely on alone.
    const paidFor = resourceUrl(header.x402Version === 2 ? header.value.resource?.url : undefined);
    if (input.resource !== undefined && paidFor !== undefined && paidFor !== input.resource) {
      throw invalidProof('the payment pays for another resource', 'resource_mismatch');
    }
    // The asset is the seller's, never the buyer's: what the payload names is only compared with it. A v1
    // payload does not name one (it does not repeat the requirements): the facilitator checks its
    // transfer against the stated asset, which the requirements name. x402 `exact` moves tokens only,
    // so a price in the native currency refuses every payload.
    const stated = input.asset ?? nativeAssetOf(chain);
    if (stated.address === null) {
      throw assetMismatch(stated, accepted === undefined ? 'a token (x402 exact)' : accepted.asset, chain);
    }
    if (accepted !== undefined && !isSameAsset(stated, accepted.asset)) {
      throw assetMismatch(stated, accepted.asset, chain);
    }
    const asset = stated.address;
    const decimals = stated.decimals;
    const expected =
      'atomic' in input.expected
        ? input.expected.atomic
        : atomicFromField(input.expected.field, input.expected.whole, decimals, stated.symbol ?? asset);
    const offered =
      accepted === undefined ? expected : BigInt(/^\d{1,78}$/.test(accepted.amount) ? accepted.amount : '0');
    if (offered < expected) {
      throw verificationFailed(
        `the payment offers ${offered} atomic units, less than the expected ${expected}`,
        'amount_too_low',
      );
    }
    const extra: Record<string, unknown> = { ...(accepted?.extra ?? {}) };
    if (chainFamily(chain.info.family).sellersNameFeePayer) {
      // Local mode: the seller's wallet signs as fee payer. Otherwise a v1 payload does not repeat the
      // requirements, so the fee payer is the one of the facilitator that will co-sign it.
      const feePayer =
        options.sellerPays === true
          ? input.walletAddress
          : accepted === undefined
            ? await this.feePayerFor(input, network ?? networkAsSent, networkAsSent)
            : undefined;
      if (feePayer !== undefined) extra.feePayer = feePayer;
    } else if (accepted === undefined && chainFamily(chain.info.family).signsTokenDomain) {
      Object.assign(extra, { name: (await chain.getTokenInfo(asset))?.name ?? 'USD Coin', version: '2' });
    }
    const resource = input.resource ?? paidFor;
    return {
      chain,
      asset: stated,
      payment: {
        x402Version: header.x402Version,
        scheme,
        networkAsSent,
        network,
        payload: schemePayloadOf(
          header.value.payload,
          header.x402Version === 2 ? (header.value as { extensions?: unknown }).extensions : undefined,
        ),
        requirements: {
          asset,
          payTo: input.walletAddress,
          // upto: the buyer signed a maximum (`offered`); the seller settles what it states it earned,
          // expectedAmount, at most that maximum (checked above and by the facilitator).
          amount: scheme === 'upto' ? expected : offered,
          maxTimeoutSeconds: accepted?.maxTimeoutSeconds ?? 60,
          extra,
        },
        ...(resource === undefined ? {} : { resource }),
      },
    };
  }
}

/** x402's facilitator request body for a payment, in its own protocol version. */
function requestBody(payment: X402Payment, input: X402ReceiveInput): Record<string, unknown> {
  const { requirements: r } = payment;
  const common = {
    scheme: payment.scheme,
    network: payment.networkAsSent,
    asset: r.asset,
    payTo: r.payTo,
    maxTimeoutSeconds: r.maxTimeoutSeconds,
    extra: r.extra,
  };
  return {
    x402Version: payment.x402Version,
    paymentPayload: input.header.value,
    paymentRequirements:
      payment.x402Version === 2
        ? { ...common, amount: r.amount.toString() }
        : {
            ...common,
            maxAmountRequired: r.amount.toString(),
            resource: input.resource ?? '',
            description: '',
            mimeType: '',
          },
  };
}

/**
 * The facilitator's refusals of a transfer in another token than the requirements' (the seller's stated
 * asset): a Solana transfer of another mint, an EVM Permit2 permit for another token. Only the transfer
 * tells for a payload that does not name its asset (v1), or names one its transfer does not move.
 */
const OTHER_ASSET_REASONS: ReadonlySet<string> = new Set([
  'invalid_exact_svm_payload_mint_mismatch',
  'permit2_token_mismatch',
]);

function isOtherAsset(reason: unknown): boolean {
  return typeof reason === 'string' && OTHER_ASSET_REASONS.has(reason);
}

/**
 * How far back the chain is searched for a payload a remote facilitator settled without its answer
 * arriving: an hour covers a seller's retries; an x402 payload lives for seconds to minutes (a Solana
 * blockhash, an authorization's validBefore), so a payment older than that was answered long before.
 */
const RECOVERY_WINDOW_MS = 60 * 60 * 1000;

/**
 * A facilitator's reason and message are repeated to the caller as they came, up to these lengths: x402's
 * are a short identifier and a sentence, while a facilitator at facilitatorUrl may answer up to 64 KiB.
 */
const MAX_REASON_LENGTH = 100;
const MAX_MESSAGE_LENGTH = 500;

function bounded(text: string, length: number): string {
  return text.length <= length ? text : `${text.slice(0, length - 1)}…`;
}

/** A facilitator's refusal as the gateway's error: a settled payment is a used proof, the rest failed verification. */
export function refusal(reason: unknown, message: unknown, transaction?: string): GatewayError {
  const code = typeof reason === 'string' && reason !== '' ? bounded(reason, MAX_REASON_LENGTH) : 'invalid';
  const text =
    typeof message === 'string' && message !== ''
      ? bounded(message, MAX_MESSAGE_LENGTH)
      : `the facilitator refused the payment (${code})`;
  if (code === 'duplicate_settlement')
    return invalidProof('this payment was already settled', 'already_used');
  // The transfer moves another token than the requirements' (the seller's stated asset): caught here for
  // payloads that do not name their asset (v1) or misname it, where only the facilitator reads the transfer.
  if (isOtherAsset(code))
    return invalidProof(`the payment is in another asset than asked (${text})`, 'asset_mismatch');
  // A settlement still pending may yet confirm, and a facilitator's own error may hide a settlement:
  // neither is the request's answer for good.
  const final = code !== 'settlement_pending' && code !== 'facilitator_error';
  const error = verificationFailed(text, code, { final });
  if (code === 'settlement_pending' && transaction !== undefined && transaction !== '') {
    return new GatewayError('PAYMENT_VERIFICATION_FAILED', {
      message: `${error.message.replace(/\.$/, '')} (transaction ${transaction}).`,
      details: { paymentProof: code, transaction },
      final,
    });
  }
  return error;
}
