import { canonicalAddress } from '../../../chains/canonical-address.ts';
import type { ChainAdapter } from '../../../chains/chain-adapter.ts';
import { GatewayError, invalidParameters } from '../../../domain/gateway-error.ts';
import { newId } from '../../../domain/ids.ts';
import { toWholeUnits } from '../../../domain/money.ts';
import type { PaymentRecord } from '../../../domain/records/payment-records.ts';
import type { Store } from '../../../store/store.ts';
import type { X402Header } from '../../../x402/payment-header.ts';
import type { FacilitatorService } from '../../facilitator/facilitator-service.ts';
import { LOCAL_TRANSACTION_VALIDITY_MS } from '../local/local-send.ts';
import { newPayment } from '../new-payment.ts';
import type { PaymentAsset } from '../payment-asset.ts';
import type { PaymentLedger } from '../payment-ledger.ts';
import { invalidProof } from '../proofs/proof-errors.ts';
import { X402_RECEIPT_PROOF_PREFIX, x402ReceiptProofKey } from './x402-receipt-proof.ts';
import { refusal, type X402ReceiveService } from './x402-receive.ts';

/** What /transaction/receive takes, as this service needs it. */
export interface X402LocalReceiveInput {
  readonly walletAddress: string;
  readonly header: X402Header;
  readonly expectedAmount: number;
  /** The seller's stated asset (see X402ReceiveInput.asset); undefined: native, which `exact` never pays. */
  readonly asset: PaymentAsset | undefined;
  /** The network (CAIP-2) the payment must be on (pinned by statedTerms); undefined: any of the wallet's family. */
  readonly network: string | undefined;
  readonly resource?: string | undefined;
  readonly facilitatorUrl?: string | undefined;
  readonly priorityFee?: number | undefined;
}

/** The receive build's answer (spec §2.5) for an x402 payload. */
export interface X402LocalReceiveResult {
  success: true;
  verified: true;
  paymentId: string;
  /** Base64 wire bytes: the buyer's transaction, the seller's fee-payer signature slot empty. */
  transaction: string;
  lastValidBlockHeight: number;
  expiresAt: number;
  amountReceived: number;
  sender: string;
  status: string;
  network: string;
  /** The token paid (x402 `exact` moves tokens); `amountReceived` is in its whole units. */
  asset: PaymentAsset;
}

export interface X402LocalReceiveDeps {
  readonly store: Store;
  readonly facilitator: FacilitatorService;
  readonly x402: X402ReceiveService;
  readonly ledger: PaymentLedger;
  readonly now?: () => number;
}

/** Whether a payment is the pending side of an x402 payload given to /transaction/receive. */
export function isX402Receipt(payment: PaymentRecord): boolean {
  return (
    payment.mode === 'local' && (payment.sourcePaymentId?.startsWith(X402_RECEIPT_PROOF_PREFIX) ?? false)
  );
}

/**
 * Local transaction mode, seller side, for a standard x402 payload (spec §4.7; v1 `X-PAYMENT`, v2
 * `PAYMENT-SIGNATURE`). The seller signs as fee payer: the buyer built its `exact` transaction with the
 * seller's wallet in `extra.feePayer`, so no facilitator can settle it, and the answer is that very
 * transaction for the seller to co-sign and broadcast through its own RPC endpoint.
 *
 * The payload is verified as the built-in facilitator verifies it (layout, amount, recipient, the
 * buyer's signature, a simulation), except that the fee payer must be the seller's wallet. A pending
 * received payment is recorded, one per payload at a time: while it is pending, the same payload asked
 * again (even at the same instant, on another instance) gets that same receipt — its id, transaction
 * and expiresAt — and only once it failed or expired may a new one be built, for a payload that still
 * verifies (can still land). The reconciler finds the transaction once it lands (by its message:
 * its id is the seller's signature) and confirms the payment, consuming the payload's identity in the
 * same database transaction, so one payload is recorded once however often it was built. It is called
 * expired only once the chain's height passes `lastValidBlockHeight`, when it can never land — not at
 * `expiresAt`, since a late broadcast would still pay the seller.
 *
 * On EVM the payload is an EIP-3009 authorization: the answer is an unsigned EIP-1559 transaction from
 * the seller's wallet calling `transferWithAuthorization`; the payment is found by the authorization's
 * AuthorizationUsed event (whoever submitted it, it pays the seller), and it expires once validBefore
 * passes unused. A Permit2 payload is answered as the seller's call of x402's Permit2 proxy's `settle`
 * (the proxy lets any caller settle; the signature binds recipient and amount), found by its Permit2
 * nonce being spent by a settle of that permit (the token's Transfer event and its transaction), and
 * expired once a block passes the permit's deadline unused. If gate402's facilitator settled the same
 * authorization or permit, its settlement records it and this receipt fails.
 */
export class X402LocalReceiveService {
  private readonly now: () => number;

  constructor(private readonly deps: X402LocalReceiveDeps) {
    this.now = deps.now ?? Date.now;
  }

  async build(accountId: string, input: X402LocalReceiveInput): Promise<X402LocalReceiveResult> {
    return this.buildOnce(accountId, input, true);
  }

  private async buildOnce(
    accountId: string,
    input: X402LocalReceiveInput,
    mayRetry: boolean,
  ): Promise<X402LocalReceiveResult> {
    if (input.facilitatorUrl !== undefined) {
      throw invalidParameters({
        facilitatorUrl:
          'an x402 payload in local mode is broadcast by your wallet, not settled by a facilitator; use POST /payment/receive to settle through one',
      });
    }
    if (input.priorityFee !== undefined) {
      throw invalidParameters({
        priorityFee: "an x402 payload's fees were set by the buyer who signed it; omit priorityFee",
      });
    }
    const { payment, chain, asset } = await this.deps.x402.paymentOf(
      {
        walletAddress: input.walletAddress,
        header: input.header,
        expected: { whole: input.expectedAmount, field: 'expectedAmount' },
        asset: input.asset,
        network: input.network,
        resource: input.resource,
        timeoutMs: 0,
      },
      { sellerPays: true },
    );
    const resolved = this.deps.facilitator.route(payment);
    if (!resolved.ok) throw refusal(resolved.reason, resolved.message);
    const { scheme } = resolved.route;
    if (scheme.forSeller === undefined || scheme.findLanded === undefined) {
      throw invalidProof(
        `x402 payloads on ${chain.info.name} are settled by POST /payment/receive, not built for your wallet to sign`,
        'x402_not_supported_here',
      );
    }
    // What the payload pays (token, recipient, amount) before what became of it: a payload that does
    // not pay this wallet is refused for that, used or not, so nobody it does not pay learns that it
    // was used, or is shown another seller's receipt of it.
    const terms = await scheme.checkTerms(payment.payload, resolved.requirements);
    if (terms !== undefined) throw refusal(terms.reason, terms.message);
    const identity = scheme.settlementKey(payment.payload);
    // The payment's `sourcePaymentId`, its receipt's key and its consumed proof's key: one per payload.
    // Used only once `identity` is known.
    const source = x402ReceiptProofKey(identity ?? '');
    // Recorded here, or settled by the facilitator (EVM: anyone may submit an authorization).
    if (
      identity !== undefined &&
      ((await this.deps.store.proofs.isConsumed(source)) ||
        (await this.deps.store.settlements.get(identity)) !== undefined)
    ) {
      throw invalidProof('this payment proof was already used', 'already_used');
    }
    // The payload's receipt, while it is pending, answers for it: asking again builds nothing new.
    const previous = identity === undefined ? undefined : await this.receiptOf(source);
    if (previous?.payment?.status === 'pending')
      return this.answer(accountId, input, previous.payment, asset);
    // A new receipt only for a payload that can still land: verified again against the chain now.
    const verdict = await scheme.verify(payment.payload, resolved.requirements, { sellerPays: true });
    if (!verdict.valid) {
      // A fee payer without funds fails the simulation, which would read as the buyer's fault.
      if (
        verdict.reason.endsWith('simulation_failed') &&
        (await chain.getBalance(input.walletAddress)) === 0n
      ) {
        throw cannotPayFee(input.walletAddress);
      }
      throw refusal(verdict.reason, verdict.message);
    }
    if (identity === undefined) throw refusal('invalid_payload', 'the payload cannot be decoded');

    const built = await scheme.forSeller(payment.payload, resolved.requirements).catch(async (error) => {
      // Building asks the chain again (EVM: the seller's gas estimate), after verification: the
      // authorization used meanwhile (settled by the facilitator, or submitted by anyone) makes it revert.
      if ((await this.deps.store.settlements.get(identity)) !== undefined)
        throw invalidProof('this payment proof was already used', 'already_used');
      const now = await scheme.verify(payment.payload, resolved.requirements, { sellerPays: true });
      throw now.valid ? error : refusal(now.reason, now.message);
    });
    if (built === undefined) {
      throw invalidProof(
        'this kind of x402 payload is settled by POST /payment/receive, not built for your wallet to submit',
        'x402_not_supported_here',
      );
    }
    if (built.fee !== undefined && (await chain.getBalance(input.walletAddress)) < built.fee) {
      throw cannotPayFee(input.walletAddress);
    }
    const at = this.now();
    const transaction = Buffer.from(built.unsigned).toString('base64');
    const record = newPayment(at, {
      id: newId('pay'),
      accountId,
      direction: 'received',
      mode: 'local',
      status: 'pending',
      network: chain.info.id,
      walletAddress: input.walletAddress,
      sender: verdict.payer,
      recipient: input.walletAddress,
      amount: resolved.requirements.amount,
      asset: { address: resolved.requirements.asset, decimals: asset.decimals },
      resource: payment.resource ?? null,
      // What the reconciler looks for on chain: the transaction exactly as built.
      signedTransaction: transaction,
      lastValidBlockHeight: built.lastValidBlockHeight,
      expiresAt: Math.min(at + LOCAL_TRANSACTION_VALIDITY_MS, built.validUntil ?? Infinity),
      sourcePaymentId: source,
    });
    // Claimed with the payment in one database transaction: of two calls building at the same instant
    // (here or on another instance), one records its receipt and the other answers with that one.
    const claimed = await this.deps.store.transaction(async (tx) => {
      if (!(await tx.x402Receipts.claim(source, record.id, previous?.id, at))) return false;
      await this.deps.ledger.recordIn(tx, record);
      return true;
    });
    if (!claimed) {
      const winner = await this.receiptOf(source);
      if (winner?.payment?.status === 'pending') return this.answer(accountId, input, winner.payment, asset);
      // The winner left pending at once (landed, or failed): looked at afresh, once.
      if (mayRetry) return this.buildOnce(accountId, input, false);
      throw invalidProof('this payment proof was already used', 'already_used');
    }
    return this.answer(accountId, input, record, asset);
  }

  /**
   * The receipt that answers for a payload (by its source, `x402:<identity>`), if one was claimed: its
   * id, which a replacement compares, and its payment.
   */
  private async receiptOf(
    source: string,
  ): Promise<{ id: string; payment: PaymentRecord | undefined } | undefined> {
    const id = await this.deps.store.x402Receipts.get(source);
    return id === undefined ? undefined : { id, payment: await this.deps.store.payments.get(id) };
  }

  /**
   * The build's answer for a receipt: the same for every call that gets it (its id, transaction and
   * expiresAt), so a seller asking again signs the same transaction. Another account's receipt of the
   * payload, or one for another wallet, is not shown: for this caller the proof is used.
   */
  private answer(
    accountId: string,
    input: X402LocalReceiveInput,
    record: PaymentRecord,
    asset: PaymentAsset,
  ): X402LocalReceiveResult {
    if (
      record.accountId !== accountId ||
      canonicalAddress(record.walletAddress) !== canonicalAddress(input.walletAddress) ||
      record.signedTransaction === null ||
      record.lastValidBlockHeight === null
    ) {
      throw invalidProof('this payment proof was already used', 'already_used');
    }
    // A repeat asking for a resource gets the receipt only if it was built for that one: its payment
    // will say which resource it paid for, and it cannot pay for two.
    if (input.resource !== undefined && record.resource !== input.resource) {
      throw invalidProof('the receipt of this payload pays for another resource', 'resource_mismatch');
    }
    return {
      success: true,
      verified: true,
      paymentId: record.id,
      transaction: record.signedTransaction,
      lastValidBlockHeight: Number(record.lastValidBlockHeight),
      expiresAt: record.expiresAt ?? record.createdAt,
      amountReceived: toWholeUnits(record.amount, record.asset?.decimals ?? asset.decimals),
      sender: record.sender,
      status: record.status,
      network: record.network,
      asset: { ...asset },
    };
  }

  /**
   * One look at a pending x402 receipt (the reconciler's pass): confirmed, consuming the payload's
   * identity, once its transaction has landed; failed if it landed with an error or the identity was
   * consumed by another receipt of the same payload; expired once it can never land.
   */
  async watch(payment: PaymentRecord, chain: ChainAdapter): Promise<void> {
    const scheme = this.deps.facilitator.schemeFor(payment.network);
    if (
      scheme?.findLanded === undefined ||
      payment.signedTransaction === null ||
      payment.lastValidBlockHeight === null
    )
      return;
    const built = new Uint8Array(Buffer.from(payment.signedTransaction, 'base64'));
    const landed = await scheme.findLanded(built, payment.lastValidBlockHeight, payment.createdAt);
    if (landed === undefined) return;
    if (landed === 'never') {
      await this.deps.ledger.move(payment, 'expired', {
        error:
          'the payment did not land before it expired (blockhash, authorization or permit deadline); it can never land now',
      });
      return;
    }
    const blockHeight = await chain.blockHeightOf(landed.slot).catch(() => null);
    const onChain = { signature: landed.transactionId, slot: landed.slot, blockHeight, fee: landed.fee };
    if (landed.error !== null) {
      await this.deps.ledger.move(payment, 'failed', { ...onChain, error: landed.error });
      return;
    }
    const at = this.now();
    const { ledger } = this.deps;
    const identity = (payment.sourcePaymentId ?? '').slice(X402_RECEIPT_PROOF_PREFIX.length);
    await this.deps.store.transaction(async (tx) => {
      // The facilitator may have settled the same authorization or permit (EVM): then its settlement records it.
      const settled = await tx.settlements.get(identity);
      const byFacilitator = settled !== undefined && settled.transactionId === landed.transactionId;
      if (
        !byFacilitator &&
        (await tx.proofs.consume(payment.sourcePaymentId ?? '', payment.id, payment.accountId, at))
      ) {
        await ledger.moveIn(tx, payment, 'confirmed', { ...onChain, confirmedAt: at });
      } else {
        await ledger.moveIn(tx, payment, 'failed', {
          ...onChain,
          error: byFacilitator
            ? 'this x402 payment was settled by the facilitator, which recorded it'
            : 'this x402 payment was recorded by another receipt of the same payload',
        });
      }
    });
  }
}

function cannotPayFee(walletAddress: string): GatewayError {
  return new GatewayError('INSUFFICIENT_BALANCE', {
    message: `The payment's network fee is paid by ${walletAddress}, which cannot pay it.`,
    details: { walletAddress: 'cannot pay the transaction fee' },
  });
}
