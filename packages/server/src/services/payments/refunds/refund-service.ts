import type { ChainAdapter } from '../../../chains/chain-adapter.ts';
import type { NetworkRegistry } from '../../../chains/network-registry.ts';
import { GatewayError, invalidParameters } from '../../../domain/gateway-error.ts';
import { atomicToDecimalText, toWholeUnits } from '../../../domain/money.ts';
import type { PaymentRecord } from '../../../domain/records/payment-records.ts';
import type { Repositories, Store } from '../../../store/store.ts';
import { atomicFromField } from '../amounts.ts';
import type { SendInput, SendOptions, SendPaymentService, SendResult } from '../custodial/send-payment.ts';
import type { LocalSendResult, LocalSendService } from '../local/local-send.ts';
import { assetOfPayment, type PaymentAsset } from '../payment-asset.ts';
import { HELD_UNTIL_ORIGINAL_FINALIZED } from './held-refund.ts';
import { refundTotals } from './refund-totals.ts';

export interface RefundInput {
  /** Whole units of the payment's asset; absent: all that is not refunded yet. */
  readonly amount?: number | undefined;
  readonly reason?: string | undefined;
  readonly metadata?: object | undefined;
}

/** A refund made from a custodial wallet: a send result (spec §2.2) linked to the payment it refunds. */
export type CustodialRefundResult = SendResult & {
  mode: 'custodial';
  refundOf: string;
  reason?: string;
  /** While the refund is held until the refunded payment is final (held-refund.ts). */
  heldUntil?: typeof HELD_UNTIL_ORIGINAL_FINALIZED;
};
/** A refund of a payment to a watch-only wallet: the unsigned transaction its owner signs (spec §2.5). */
export type LocalRefundResult = LocalSendResult & { mode: 'local'; refundOf: string; reason?: string };
export type RefundResult = CustodialRefundResult | LocalRefundResult;

export interface RefundServiceDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly send: SendPaymentService;
  readonly localSend: LocalSendService;
  readonly now?: () => number;
}

/**
 * POST /payment/refund/{paymentId} (#30): gives back all or part of a payment the account received, to
 * the payer, in the same asset on the same network, as a new sent payment whose `refundOf` names it.
 *
 * Money rules. Amounts are exact atomic units (the default, all that is left, is never converted
 * through a number). The refunds of a payment never sum above it, even when many refund requests
 * arrive at once on several instances: the send path calls `fits` inside the one database transaction
 * that records the refund, after it took the payment's refund lock row (PaymentRepository.lockRefunds),
 * so the sum it reads and the refund it writes are one step for every other refund of the payment. A
 * refund that failed, expired or was reverted stops counting (refund-totals.ts). An Idempotency-Key
 * answers the refund it made, however often it is retried.
 *
 * The refund is made by the existing send paths: a custodial wallet's by SendPaymentService (signed,
 * stored before broadcast, resent by the reconciler), and a watch-only wallet's by LocalSendService (an
 * unsigned transaction its owner signs). Both hold refunds to the account's and the key's spend
 * policies like any money leaving a wallet (docs/refunds.md).
 *
 * Finality. A refund of a payment that is only `confirmed` is decided now (checked, counted against the
 * payment, charged to the spend policies) but its transaction is held, not made, until the payment is
 * `finalized`: a reorganisation can still take a confirmed payment off the chain, and the seller must
 * never have paid back a payment that did not happen. The reconciler then sends it, or cancels it if the
 * payment was reverted (held-refund.ts, held-refund-release.ts). A watch-only wallet's refund cannot be
 * held (its owner signs and broadcasts the answer when they like), so it is refused until then.
 */
export class RefundService {
  private readonly now: () => number;

  constructor(private readonly deps: RefundServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  async refund(
    accountId: string,
    paymentId: string,
    input: RefundInput,
    idempotencyKey?: string,
    keyId: string | null = null,
  ): Promise<RefundResult> {
    const { store, networks } = this.deps;
    const original = await store.payments.get(paymentId);
    // Another account's payment is answered exactly like one that does not exist.
    if (original === undefined || original.accountId !== accountId) {
      throw new GatewayError('PAYMENT_NOT_FOUND', { message: `No payment ${paymentId}.` });
    }
    const earlier =
      idempotencyKey === undefined
        ? undefined
        : await store.payments.findByIdempotencyKey(accountId, idempotencyKey);
    if (earlier !== undefined && earlier.refundOf !== original.id) {
      throw new GatewayError('IDEMPOTENCY_KEY_REUSED', {
        message: 'This Idempotency-Key was used for another payment; use a new key for this refund.',
        details: { 'Idempotency-Key': 'was used with another request' },
      });
    }
    const chain = networks.get(original.network);
    if (chain === undefined) {
      throw invalidParameters({
        paymentId: `is on ${original.network}, a network this gateway does not serve`,
      });
    }
    const asset = assetOfPayment(networks, original);
    if (earlier !== undefined) {
      // The same refund, answered again by the path that made it (it finds the payment by the key).
      return this.make(
        accountId,
        original,
        chain,
        asset,
        earlier.amount,
        input,
        idempotencyKey,
        keyId,
        earlier.mode,
      );
    }

    refundable(original);
    const symbol = asset.symbol ?? asset.address ?? chain.info.nativeCurrency.symbol;
    const given =
      input.amount === undefined
        ? undefined
        : atomicFromField('amount', input.amount, asset.decimals, symbol);
    if (given === 0n) throw invalidParameters({ amount: 'must be more than 0' });
    const left = original.amount - refundTotals(await store.payments.refundsOf(original.id), chain).held;
    const amount = given ?? left;
    checkFits(original, asset, amount, left, given === undefined ? 'paymentId' : 'amount');

    const wallet = await store.wallets.findByAddress(chain.info.family, original.walletAddress);
    const custodial = wallet !== undefined && wallet.accountId === accountId && !wallet.watchOnly;
    if (!custodial && original.status !== 'finalized') {
      throw new GatewayError('INVALID_PAYMENT_STATE', {
        message: `Payment ${original.id} is confirmed but not finalized yet, and went to a wallet whose owner signs its refund (local mode): a refund signed now could still be broadcast if a reorganisation took the payment back. Retry once it is finalized.`,
        details: {
          paymentId: 'is confirmed, not finalized yet; retry once it is finalized',
          status: original.status,
        },
        // Finality is usually minutes away: a retry with the same key is judged again.
        final: false,
      });
    }
    return this.make(
      accountId,
      original,
      chain,
      asset,
      amount,
      input,
      idempotencyKey,
      keyId,
      custodial ? 'custodial' : 'local',
    );
  }

  private async make(
    accountId: string,
    original: PaymentRecord,
    chain: ChainAdapter,
    asset: PaymentAsset,
    amount: bigint,
    input: RefundInput,
    idempotencyKey: string | undefined,
    keyId: string | null,
    mode: PaymentRecord['mode'],
  ): Promise<RefundResult> {
    const send: SendInput = {
      walletAddress: original.walletAddress,
      recipientAddress: original.sender,
      amount: toWholeUnits(amount, asset.decimals),
      network: original.network,
      // Policies with allowedHosts judge a refund by the resource the payment paid for.
      ...(original.resource === null ? {} : { resource: original.resource }),
      ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
      ...(asset.address === null ? {} : { asset: asset.address }),
    };
    const options: SendOptions = {
      atomicAmount: amount,
      refundOf: original.id,
      ...(input.reason === undefined ? {} : { refundReason: input.reason }),
      inTransaction: (tx) => this.fits(tx, original, chain, asset, amount),
    };
    const link = { refundOf: original.id, ...(input.reason === undefined ? {} : { reason: input.reason }) };
    if (mode === 'local') {
      const built = await this.deps.localSend.build(accountId, send, idempotencyKey, keyId, options);
      return { ...built, mode: 'local', ...link };
    }
    const sent = await this.deps.send.send(accountId, send, idempotencyKey, keyId, {
      ...options,
      hold: original.status !== 'finalized',
    });
    // Held: no transaction yet, so no signature and no proof of one (held-refund.ts).
    if (sent.status === 'pending' && sent.signature === '') {
      return {
        ...sent,
        paymentProof: '',
        mode: 'custodial',
        ...link,
        heldUntil: HELD_UNTIL_ORIGINAL_FINALIZED,
      };
    }
    return { ...sent, mode: 'custodial', ...link };
  }

  /**
   * The enforcement, in the transaction that records the refund: under the payment's refund lock, the
   * refunds that count plus this one must not exceed the payment. Throws to roll the refund back.
   */
  private async fits(
    tx: Repositories,
    original: PaymentRecord,
    chain: ChainAdapter,
    asset: PaymentAsset,
    amount: bigint,
  ): Promise<void> {
    await tx.payments.lockRefunds(original.id, this.now());
    const { held } = refundTotals(await tx.payments.refundsOf(original.id), chain);
    checkFits(original, asset, amount, original.amount - held, 'amount');
  }
}

/** Only a payment the account received, paid and not itself a refund, can be refunded. */
function refundable(payment: PaymentRecord): void {
  if (payment.refundOf !== undefined) {
    throw invalidParameters({ paymentId: 'is a refund; a refund cannot be refunded' });
  }
  if (payment.direction !== 'received') {
    throw invalidParameters({
      paymentId: 'is a payment this account sent; only a payment it received can be refunded',
    });
  }
  if (payment.status !== 'confirmed' && payment.status !== 'finalized') {
    throw new GatewayError('INVALID_PAYMENT_STATE', {
      message: `Payment ${payment.id} is ${payment.status}; only a confirmed or finalized payment can be refunded.`,
      details: { paymentId: `is ${payment.status}; must be confirmed or finalized`, status: payment.status },
      // A pending payment may still confirm: a retry with the same key is judged again.
      final: payment.status !== 'pending' && payment.status !== 'submitted',
    });
  }
  if (payment.sender === '') {
    throw invalidParameters({
      paymentId: 'names no payer (the facilitator did not report one) to refund to',
    });
  }
}

/** INVALID_PARAMETERS naming `field` when `amount` is more than `left` (nothing left: naming what is refunded). */
function checkFits(
  original: PaymentRecord,
  asset: PaymentAsset,
  amount: bigint,
  left: bigint,
  field: 'amount' | 'paymentId',
): void {
  if (amount <= left && amount > 0n) return;
  const symbol = asset.symbol ?? asset.address ?? '';
  const text = (atomic: bigint) =>
    `${atomicToDecimalText(atomic > 0n ? atomic : 0n, asset.decimals)} ${symbol}`;
  const detail =
    left <= 0n
      ? `nothing is left to refund: ${text(original.amount)} is refunded in full or under way`
      : `is more than is left to refund: ${text(left)} of ${text(original.amount)}`;
  throw new GatewayError('INVALID_PARAMETERS', {
    message: `Payment ${original.id}: ${detail}.`,
    details: { [field]: detail, refundable: text(left) },
    // A refund that fails or expires gives its part back: a retry with the same key is judged again.
    final: false,
  });
}
